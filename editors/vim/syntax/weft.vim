" Vim syntax file
" Language:    weft, a functional tensor language
" Maintainer:  the weft project (editors/vim in the weft repository)
" Covers docs/syntax.md: keywords, element types, shape variables ..s, type variables 'a, layout
" variables ?L, memory spaces @shared, swizzles, nested {- -} comments, strings, numbers, operators.

if exists('b:current_syntax')
  finish
endif
let s:cpo_save = &cpo
set cpo&vim

" Names are [A-Za-z_][A-Za-z0-9_']*: a prime belongs to a name, so `def'` is no keyword.
syn iskeyword @,48-57,_,'
syn case match

" Where several items match at one position the one defined last wins: so what weft's lexer
" rejects comes first, then the operators (`|>` is no error), then the rest (`--` is a comment).
syn match   weftError           "[!&|;#$`~^{}\\]"
syn match   weftOperator        "|>\|->\|||\|&&\|==\|!=\|<=\|>=\|\.\.\|[-+*/%<>=@]"

syn keyword weftDeclaration     def kernel nextgroup=weftDefName skipwhite
syn match   weftDefName         "\h[[:alnum:]_']*" contained
syn keyword weftInclude         import
syn keyword weftLet             let in
syn keyword weftKeyword         fn where tiles grid threads cast
syn keyword weftStorageClass    out
syn keyword weftConditional     if then else
syn keyword weftRepeat          loop for with do pipeline
syn keyword weftBoolean         true false
syn keyword weftType            bool i4 i8 i16 i32 i64 u4 u8 u16 u32 u64 f8e4m3 f8e5m2 f16 bf16 f32 f64
syn keyword weftBuiltin         map map2 reduce scan sum max min mean argmax maximum minimum select
syn keyword weftBuiltin         exp log sqrt rsqrt tanh sigmoid sin cos abs matmul_f32 transpose permute
syn keyword weftBuiltin         reshape concat expand iota zeros ones full gather dequant
syn keyword weftBuiltin         load save random arg print time
syn keyword weftKernelBuiltin   block_idx shared regs tile mma store

" 'a (a type or element-type variable), ?L (a layout variable), ..s (a shape variable).
syn match   weftTypeVariable    "\%([[:alnum:]_]\)\@1<!'\h[[:alnum:]_']*"
syn match   weftLayoutVariable  "?\h[[:alnum:]_']*"
syn match   weftShapeVariable   "\.\.\h[[:alnum:]_']*"
" Kernel-tier types: a memory space, swizzles and CuTe's static integers.
syn match   weftMemorySpace     "@\s*\%(global\|shared\|reg\)\>"
syn match   weftLayoutFunction  "\<\%(Sw\|swizzle\)\ze\s*<"

syn match   weftNumber          "\<\d\+\>"
syn match   weftFloat           "\<\d\+\%(\.\d\+\%([eE][+-]\=\d\+\)\=\|[eE][+-]\=\d\+\)\>"

syn match   weftEscapeError     "\\." contained
syn match   weftEscape          "\\[\\\"nt]" contained
syn region  weftString          start=+"+ skip=+\\\\\|\\"+ end=+"+ end=+$+ oneline contains=weftEscape,weftEscapeError

syn keyword weftTodo            TODO FIXME XXX contained
syn match   weftLineComment     "--.*$" contains=weftTodo,@Spell
syn region  weftBlockComment    start="{-" end="-}" contains=weftBlockComment,weftTodo,@Spell fold

syn sync minlines=50

hi def link weftOperator        Operator
hi def link weftError           Error
hi def link weftDeclaration     Keyword
hi def link weftDefName         Function
hi def link weftInclude         Include
hi def link weftLet             Keyword
hi def link weftKeyword         Keyword
hi def link weftStorageClass    StorageClass
hi def link weftConditional     Conditional
hi def link weftRepeat          Repeat
hi def link weftBoolean         Boolean
hi def link weftType            Type
hi def link weftBuiltin         Function
hi def link weftKernelBuiltin   Function
hi def link weftTypeVariable    Type
hi def link weftLayoutVariable  Identifier
hi def link weftShapeVariable   Identifier
hi def link weftMemorySpace     StorageClass
hi def link weftLayoutFunction  Function
hi def link weftNumber          Number
hi def link weftFloat           Float
hi def link weftEscape          SpecialChar
hi def link weftEscapeError     Error
hi def link weftString          String
hi def link weftTodo            Todo
hi def link weftLineComment     Comment
hi def link weftBlockComment    Comment

let b:current_syntax = 'weft'
let &cpo = s:cpo_save
unlet s:cpo_save
