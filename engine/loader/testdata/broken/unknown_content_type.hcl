tool "film" {
  description = "Shows a film."
  result {
    content "video" {
      data = "AAAA"
    }
  }
}
