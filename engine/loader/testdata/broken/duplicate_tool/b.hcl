# The same name again, in another file.

tool "greet" {
  description = "Says hello again."
}
