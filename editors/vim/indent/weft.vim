" Vim indent file
" Language: weft
"
" One step (shiftwidth) in after a line that ends with `=`, `->`, `do`, `then`, `else`, `(` or `[`;
" one step out for a line that starts with `in`, `else`, `)` or `]`. A declaration's header
" continues two steps in (`    where ...`, `    grid ... =`), and its body is one step in from the
" `def` or `kernel`. `let x = e in` keeps the indentation, so a chain of lets lines up.

if exists('b:did_indent')
  finish
endif
let b:did_indent = 1

setlocal indentexpr=GetWeftIndent(v:lnum)
setlocal indentkeys=0),0],0=in,0=else,o,O,!^F
setlocal autoindent nolisp nosmartindent nocindent

let b:undo_indent = 'setlocal indentexpr< indentkeys< autoindent< lisp< smartindent< cindent<'

if exists('*GetWeftIndent')
  finish
endif

let s:declaration = '^\s*\%(def\|kernel\)\>'

" A line without its trailing `--` comment (a `--` inside a string is rare enough to ignore).
function! s:Code(lnum) abort
  return substitute(getline(a:lnum), '\s*--.*$', '', '')
endfunction

" The `def` or `kernel` line whose header `lnum` continues, or 0.
function! s:HeaderStart(lnum) abort
  let lnum = a:lnum
  while lnum > 0 && a:lnum - lnum < 20
    if getline(lnum) =~ s:declaration
      return lnum
    endif
    if lnum != a:lnum && s:Code(lnum) =~ '\%(=\|\<in\|\<do\)\s*$'
      return 0
    endif
    let lnum = prevnonblank(lnum - 1)
  endwhile
  return 0
endfunction

function! s:InCommentOrString() abort
  return synIDattr(synID(line('.'), col('.'), 0), 'name') =~? 'comment\|string'
endfunction

" The indentation of the `let` that the `in` at (lnum, col) closes, or -1.
function! s:LetIndent(lnum, col) abort
  let save = getcurpos()
  call cursor(a:lnum, a:col)
  let [lnum, _] = searchpairpos('\<let\>', '', '\<in\>', 'bnW', 's:InCommentOrString()', 0, 50)
  call setpos('.', save)
  return lnum > 0 ? indent(lnum) : -1
endfunction

function! GetWeftIndent(lnum) abort
  let line = getline(a:lnum)
  if line =~ '^\s*\%(def\|kernel\|import\)\>'
    return 0
  endif
  " A comment above a declaration (after its blank line or other comments) starts in column 0.
  if line =~ '^\s*--'
    let next = a:lnum + 1
    while next <= line('$') && getline(next) =~ '^\s*--'
      let next += 1
    endwhile
    if getline(next) =~ '^\s*\%(def\|kernel\|import\)\>'
      return 0
    endif
  endif
  let prev = prevnonblank(a:lnum - 1)
  if prev == 0
    return 0
  endif
  " `in` lines up with its `let`; after a `... in`, the next line does too.
  if line =~ '^\s*in\>'
    let ind = s:LetIndent(a:lnum, match(line, '\S') + 1)
    if ind >= 0
      return ind
    endif
  endif
  let code = s:Code(prev)
  if code =~ '\<in\s*$'
    let ind = s:LetIndent(prev, strlen(code) - 1)
    if ind >= 0
      return ind
    endif
  endif
  let ind = indent(prev)
  let sw = shiftwidth()
  if code =~ '\%(\%(^\|[^=<>!]\)=\|->\|\<\%(do\|then\|else\)\|[([]\)\s*$'
    let header = code =~ '\%(^\|[^=<>!]\)=\s*$' ? s:HeaderStart(prev) : 0
    let ind = (header ? indent(header) : ind) + sw
  elseif code =~ s:declaration && code !~ '\%(^\|[^=<>!]\)=\%([^=]\|$\)'
    " A header that goes on: `where`, `grid ... threads ... =`.
    let ind += 2 * sw
  endif
  if line =~ '^\s*\%(in\>\|else\>\|[)\]]\)'
    let ind -= sw
  endif
  return ind < 0 ? 0 : ind
endfunction
