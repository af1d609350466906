" Headless tests of editors/vim, run from the repository root:
"   vim -Nu NONE -i NONE -es -S editors/vim/test/run.vim
" Opens files as a user would (runtimepath with editors/vim, filetype plugin indent on, syntax on)
" and checks the filetype, the syntax groups of tokens, the comment settings and the indentation.
" Prints one line per failure and a summary; exits 1 if anything failed.

let s:root = fnamemodify(expand('<sfile>:p'), ':h:h:h:h')
execute 'set runtimepath^=' . fnameescape(s:root . '/editors/vim')
filetype plugin indent on
syntax on

let s:passed = 0
let s:failed = []

function! s:Check(what, actual, expected) abort
  if a:actual ==# a:expected
    let s:passed += 1
  else
    call add(s:failed, printf('%s: %s: expected %s, got %s', expand('%:t'), a:what, string(a:expected), string(a:actual)))
  endif
endfunction

" The syntax group at the n-th match of `pattern` (a very-nomagic string) on line `lnum`.
function! s:GroupAt(lnum, text, ...) abort
  let col = 0
  for _ in range(a:0 ? a:1 : 1)
    let col = stridx(getline(a:lnum), a:text, col) + 1
    if col == 0
      return '<' . a:text . ' not on line ' . a:lnum . '>'
    endif
  endfor
  return synIDattr(synID(a:lnum, col, 1), 'name')
endfunction

function! s:Line(text) abort
  return search('\V' . escape(a:text, '\'), 'cnw')
endfunction

" --- an example program ----------------------------------------------------------------------
execute 'edit ' . fnameescape(s:root . '/examples/gemm_kernel.weft')
call s:Check('filetype', &filetype, 'weft')
call s:Check('syntax', get(b:, 'current_syntax', ''), 'weft')
let s:k = s:Line('kernel gemm')
call s:Check('kernel', s:GroupAt(s:k, 'kernel'), 'weftDeclaration')
call s:Check('kernel name', s:GroupAt(s:k, 'gemm'), 'weftDefName')
call s:Check('dtype bf16', s:GroupAt(s:k, 'bf16'), 'weftType')
call s:Check('out', s:GroupAt(s:k, 'out'), 'weftStorageClass')
call s:Check('comment', s:GroupAt(1, 'A tile kernel'), 'weftLineComment')
call s:Check('where', s:GroupAt(s:Line('where m'), 'where'), 'weftKeyword')
call s:Check('number', s:GroupAt(s:Line('where m'), '128'), 'weftNumber')
call s:Check('pipeline', s:GroupAt(s:Line('pipeline kk'), 'pipeline'), 'weftRepeat')
call s:Check('let', s:GroupAt(s:Line('pipeline kk'), 'let'), 'weftLet')
call s:Check('string', s:GroupAt(s:Line('save "'), '"c'), 'weftString')
call s:Check('commentstring', &l:commentstring, '-- %s')
call s:Check('comments', &l:comments, 's1fl:{-,mb:-,ex:-},:--')
call s:Check('shiftwidth', &l:shiftwidth, 2)
call s:Check('expandtab', &l:expandtab, 1)
call s:Check('indentexpr', &l:indentexpr, 'GetWeftIndent(v:lnum)')

execute 'edit ' . fnameescape(s:root . '/stdlib/nn.weft')
let s:l = s:Line('def softmax')
call s:Check('def', s:GroupAt(s:l, 'def'), 'weftDeclaration')
call s:Check('def name', s:GroupAt(s:l, 'softmax'), 'weftDefName')
call s:Check('type variable', s:GroupAt(s:l, "'f"), 'weftTypeVariable')
call s:Check('shape variable', s:GroupAt(s:l, '..s'), 'weftShapeVariable')
call s:Check('float', s:GroupAt(s:Line('1e-5'), '1e-5'), 'weftFloat')
call s:Check('builtin', s:GroupAt(s:Line('1e-5'), 'rsqrt'), 'weftBuiltin')

" --- the rest of the syntax, in a scratch buffer ---------------------------------------------
enew
setfiletype weft
call setline(1, [
      \ '{- a {- nested -} block -} def x = 1',
      \ 'def s = "tab\t bad\q" -- TODO',
      \ "def y (x: f32[8, 64] @shared ?L) (z: 't[n] @reg Sw<3,4,3>) = x |> f @ y -> 2.5e-3",
      \ "def x'1 = let_in'def 1..s",
      \ 'def bad = a ! b',
      \ ])
call s:Check('block comment', s:GroupAt(1, 'a {-'), 'weftBlockComment')
call s:Check('nested block comment', s:GroupAt(1, 'nested'), 'weftBlockComment')
call s:Check('after the nested comment, still comment', s:GroupAt(1, 'block'), 'weftBlockComment')
call s:Check('after the block comment', s:GroupAt(1, 'def'), 'weftDeclaration')
call s:Check('escape', s:GroupAt(2, '\t'), 'weftEscape')
call s:Check('bad escape', s:GroupAt(2, '\q'), 'weftEscapeError')
call s:Check('todo', s:GroupAt(2, 'TODO'), 'weftTodo')
call s:Check('memory space', s:GroupAt(3, '@shared'), 'weftMemorySpace')
call s:Check('layout variable', s:GroupAt(3, '?L'), 'weftLayoutVariable')
call s:Check('element-type variable', s:GroupAt(3, "'t"), 'weftTypeVariable')
call s:Check('swizzle', s:GroupAt(3, 'Sw'), 'weftLayoutFunction')
call s:Check('pipe', s:GroupAt(3, '|>'), 'weftOperator')
call s:Check('matmul', s:GroupAt(3, '@ y'), 'weftOperator')
call s:Check('arrow', s:GroupAt(3, '->'), 'weftOperator')
call s:Check('float with exponent', s:GroupAt(3, '2.5e-3'), 'weftFloat')
call s:Check('name with a prime', s:GroupAt(4, "x'1"), 'weftDefName')
call s:Check('no keyword inside a name', s:GroupAt(4, "let_in'def"), '')
call s:Check('no number inside a name', s:GroupAt(4, "1 ="), 'weftDefName')
call s:Check('integer before ..s', s:GroupAt(4, '1..s'), 'weftNumber')
call s:Check('shape variable after an integer', s:GroupAt(4, '..s'), 'weftShapeVariable')
call s:Check('invalid character', s:GroupAt(5, '!'), 'weftError')
bwipeout!

" --- indentation -----------------------------------------------------------------------------
execute 'edit ' . fnameescape(s:root . '/editors/test/indent.weft')
let s:expected = getline(1, '$')
silent %s/^\s\+//e
silent normal! gg=G
let s:actual = getline(1, '$')
for s:i in range(len(s:expected))
  call s:Check('indent of line ' . (s:i + 1), s:actual[s:i], s:expected[s:i])
endfor
bwipeout!

" --- the summary -----------------------------------------------------------------------------
let s:out = s:failed + [printf('vim: %d passed, %d failed', s:passed, len(s:failed))]
call writefile(s:out, '/dev/stdout', 'a')
if empty(s:failed)
  qall!
else
  cquit!
endif
