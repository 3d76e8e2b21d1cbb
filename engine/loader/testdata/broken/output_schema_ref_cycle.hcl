tool "greet" {
  description = "Says hello."
  output_schema = jsonencode({
    type = "object"
    properties = {
      x = { anyOf = [{ "$ref" = "#/properties/x" }] }
    }
  })
}
