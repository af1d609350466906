" Vim filetype plugin
" Language: weft

if exists('b:did_ftplugin')
  finish
endif
let b:did_ftplugin = 1
let s:cpo_save = &cpo
set cpo&vim

" Comments: `-- to the end of the line` and `{- nested blocks -}`; gc/commentary use commentstring.
setlocal comments=s1fl:{-,mb:-,ex:-},:--
setlocal commentstring=--\ %s
setlocal formatoptions-=t formatoptions+=croql
" Two spaces, as in examples/ and stdlib/.
setlocal expandtab shiftwidth=2 softtabstop=2
" A name may hold primes (x', let_in'def).
setlocal iskeyword=@,48-57,_,'
" `gf` on `import "path/to/file.weft"`, and `import nn` finds stdlib/nn.weft via 'path'.
setlocal suffixesadd=.weft
setlocal include=^\\s*import\\s\\+\"\\=

" matchit: % between let/in, if/then/else and {- -}.
let b:match_words = '\<let\>:\<in\>,\<if\>:\<then\>:\<else\>,{-:-}'

let b:undo_ftplugin = 'setlocal comments< commentstring< formatoptions< expandtab< shiftwidth<'
      \ . ' softtabstop< iskeyword< suffixesadd< include< | unlet! b:match_words'

let &cpo = s:cpo_save
unlet s:cpo_save
