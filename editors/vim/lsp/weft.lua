-- Neovim 0.11+ reads this file from 'runtimepath' for `vim.lsp.enable('weft')`: the weft language
-- server, `weft lsp`, over stdio. Set vim.g.weft_path to use a weft that is not on PATH.
return {
  cmd = { vim.g.weft_path or 'weft', 'lsp' },
  filetypes = { 'weft' },
  root_markers = { '.git' },
}
