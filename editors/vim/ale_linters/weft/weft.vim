" ALE (https://github.com/dense-analysis/ale; Debian's vim-ale) linter: the weft language server,
" `weft lsp`, over stdio. With editors/vim on 'runtimepath' ALE finds this file by itself; it gives
" diagnostics as you type, :ALEHover (types with their shapes), :ALEGoToDefinition, completion.
"   g:ale_weft_lsp_executable  the weft executable (default: g:weft_path, else `weft` on PATH)
"   g:ale_weft_lsp_options     more arguments after `weft lsp`

call ale#Set('weft_lsp_executable', get(g:, 'weft_path', 'weft'))
call ale#Set('weft_lsp_options', '')

function! ale_linters#weft#weft#GetCommand(buffer) abort
    let l:options = ale#Var(a:buffer, 'weft_lsp_options')

    return '%e lsp' . (empty(l:options) ? '' : ' ' . l:options)
endfunction

" The root ALE gives the server: the nearest folder with .git, else the file's own folder (imports
" are read relative to the file, so the root only names the workspace).
function! ale_linters#weft#weft#GetProjectRoot(buffer) abort
    let l:git = ale#path#FindNearestDirectory(a:buffer, '.git')

    return !empty(l:git) ? fnamemodify(l:git, ':h:h') : expand('#' . a:buffer . ':p:h')
endfunction

call ale#linter#Define('weft', {
\   'name': 'weft',
\   'lsp': 'stdio',
\   'executable': {b -> ale#Var(b, 'weft_lsp_executable')},
\   'command': function('ale_linters#weft#weft#GetCommand'),
\   'project_root': function('ale_linters#weft#weft#GetProjectRoot'),
\})
