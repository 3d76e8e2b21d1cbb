tool "pick" {
  description = "Picks a colour."
  param "colour" {
    type = "string"
    enum = ["red", 2]
  }
}
