# Tests of tools.hcl, run with `mcpd test`: it starts the upstream (npx
# downloads it on the first run) and calls through mcpd.

test "echo reaches the upstream" {
  tool          = "echo"
  args          = { message = "hello" }
  text_contains = "Echo: hello"
}

test "echo's own schema refuses an empty message" {
  tool          = "echo"
  args          = { message = "" }
  is_error      = true
  text_contains = "message"
}
