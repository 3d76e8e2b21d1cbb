# A few tests of the conformance fixtures, run with
#   mcpd test -c examples/conformance
# (the conformance suite itself is run by .ci/run; see docs/testing.md).

test "simple_text" {
  tool          = "test_simple_text"
  text_contains = "simple text response"
}

test "image_content" {
  tool   = "test_image_content"
  assert = "content[0].type == 'image' && content[0].mimeType == 'image/png'"
}

test "error_handling" {
  tool     = "test_error_handling"
  is_error = true
}

test "static_text_resource" {
  resource      = "test://static-text"
  text_contains = "content of the static text resource"
}

test "template_resource" {
  resource = "test://template/42/data"
  assert   = "fromJSON(text).id == '42' && fromJSON(text).templateTest"
}

test "prompt_with_arguments" {
  prompt        = "test_prompt_with_arguments"
  args          = { arg1 = "a", arg2 = "b" }
  text_contains = "arg1='a', arg2='b'"
}
