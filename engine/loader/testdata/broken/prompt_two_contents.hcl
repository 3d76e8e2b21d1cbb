prompt "ask" {
  message {
    role = "user"
    text = "Hello"
    content "text" {
      text = "again"
    }
  }
}
