# The tools the benchmark harness calls (bench/run.sh). bench/baseline serves
# the same ones on the bare SDK.

tool "static" {
  description = "Returns a fixed text."
  param "name" {
    type       = "string"
    max_length = 64
    required   = false
  }
  result {
    content "text" {
      text = "This is a static response."
    }
  }
}

tool "echo" {
  description = "Returns its argument."
  param "text" {
    type = "string"
  }
  result {
    content "text" {
      text = args.text
    }
  }
}
