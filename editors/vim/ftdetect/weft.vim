" Weft source files: *.weft.
autocmd BufRead,BufNewFile *.weft setfiletype weft
