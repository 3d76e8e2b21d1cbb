tool "get_ticket" {
  description = "g"
  result {
    content "text" {
      text = "t"
    }
  }
}
tool "close_ticket" {
  description = "c"
  result {
    content "text" {
      text = "c"
    }
  }
}
resource "faq" {
  uri  = "docs://faq"
  text = "faq"
}
prompt "reply" {
  message {
    text = "r"
  }
}
toolset "support" {
  tools = ["get_*", "search_*"]
}
