-- Drives `mcpd lsp` from neovim's built-in client, headless, and writes
-- what it saw to $MCPD_LSP_OUT as JSON for TestNeovim to check.
-- Environment: MCPD_LSP_CMD (the server), MCPD_LSP_FILE (a config file to
-- open), MCPD_LSP_OUT.
local out = {}

local function run()
  local file = os.getenv('MCPD_LSP_FILE')
  vim.cmd('edit ' .. vim.fn.fnameescape(file))
  local buf = vim.api.nvim_get_current_buf()
  local uri = vim.uri_from_bufnr(buf)
  local published = {}
  local id = vim.lsp.start_client({
    name = 'mcpd',
    cmd = { os.getenv('MCPD_LSP_CMD') },
    root_dir = vim.fn.fnamemodify(file, ':h'),
    handlers = {
      ['textDocument/publishDiagnostics'] = function(_, result)
        if result.uri == uri then table.insert(published, result.diagnostics) end
      end,
    },
  })
  assert(id, 'start_client failed')
  vim.lsp.buf_attach_client(buf, id)
  local client = vim.lsp.get_client_by_id(id)
  assert(vim.wait(20000, function() return #published > 0 end, 50), 'no diagnostics for the file as opened')
  out.opened = published[#published]

  -- Introduce a misspelt backend and wait for the diagnostic.
  local lines = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
  local lnum
  for i, l in ipairs(lines) do
    if l:find('backend = "github"', 1, true) then lnum = i - 1; break end
  end
  assert(lnum, 'no backend line')
  vim.api.nvim_buf_set_lines(buf, lnum, lnum + 1, false, { '    backend = "githb"' })
  assert(vim.wait(20000, function()
    local last = published[#published]
    return last and #last > 0
  end, 50), 'no diagnostic after the edit')
  out.edited = published[#published]

  local function req(method, line, character)
    local res = client.request_sync(method, { textDocument = { uri = uri }, position = { line = line, character = character } }, 10000, buf)
    assert(res and not res.err, method .. ' failed: ' .. vim.inspect(res))
    return res.result
  end
  local items = req('textDocument/completion', lnum, 15)
  out.completion = {}
  for _, it in ipairs(items.items or items) do table.insert(out.completion, it.label) end
  local tool
  for i, l in ipairs(lines) do
    if l:find('^tool ') then tool = i - 1; break end
  end
  local hover = req('textDocument/hover', tool, 1)
  out.hover = hover and hover.contents.value
  vim.api.nvim_buf_set_lines(buf, lnum, lnum + 1, false, { '    backend = "github"' })
  out.definition = req('textDocument/definition', lnum, 17)
end

local ok, err = pcall(run)
if not ok then out.error = tostring(err) end
local f = io.open(os.getenv('MCPD_LSP_OUT'), 'w')
f:write(vim.fn.json_encode(out))
f:close()
vim.lsp.stop_client(vim.lsp.get_active_clients())
vim.cmd('qa!')
