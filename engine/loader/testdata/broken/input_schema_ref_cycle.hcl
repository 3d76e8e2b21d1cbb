tool "greet" {
  description = "Says hello."
  input_schema = jsonencode({
    type    = "object"
    "$defs" = { a = { "$ref" = "#/$defs/a" } }
    "$ref"  = "#/$defs/a"
  })
}
