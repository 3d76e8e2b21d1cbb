# The fixtures the official MCP conformance suite calls by name, declared in
# mcpd's config language alone. CI serves this directory and runs the suite
# against it (see README.md beside this file).

server {
  name    = "mcpd-conformance"
  version = "1.0.0"
}

tool "test_simple_text" {
  description = "Tests simple text content response"
  result {
    content "text" {
      text = "This is a simple text response for testing."
    }
  }
}

tool "test_image_content" {
  description = "Tests image content response"
  result {
    content "image" {
      data      = filebase64("pixel.png")
      mime_type = "image/png"
    }
  }
}

tool "test_audio_content" {
  description = "Tests audio content response"
  result {
    content "audio" {
      data      = filebase64("tone.wav")
      mime_type = "audio/wav"
    }
  }
}

tool "test_embedded_resource" {
  description = "Tests embedded resource content response"
  result {
    content "resource" {
      uri       = "test://embedded-resource"
      mime_type = "text/plain"
      text      = "This is an embedded resource content."
    }
  }
}

tool "test_multiple_content_types" {
  description = "Tests response with multiple content types (text, image, resource)"
  result {
    content "text" {
      text = "Multiple content types test:"
    }
    content "image" {
      data      = filebase64("pixel.png")
      mime_type = "image/png"
    }
    content "resource" {
      uri       = "test://mixed-content-resource"
      mime_type = "application/json"
      text      = jsonencode({ test = "data", value = 123 })
    }
  }
}

tool "test_tool_with_progress" {
  description = "Tests tool that reports progress notifications"
  progress {
    steps    = [0, 50, 100]
    total    = 100
    interval = "50ms"
    message  = "Working"
  }
  result {
    content "text" {
      text = "Progress complete"
    }
  }
}

tool "test_error_handling" {
  description = "Tests error response handling"
  result {
    error_when    = "true"
    error_message = "'This tool intentionally returns an error for testing'"
  }
}

resource "static-text" {
  uri         = "test://static-text"
  description = "A static text resource for testing"
  mime_type   = "text/plain"
  text        = "This is the content of the static text resource."
}

resource "static-binary" {
  uri         = "test://static-binary"
  description = "A static binary resource (image) for testing"
  mime_type   = "image/png"
  file        = "pixel.png"
}

resource "watched-resource" {
  uri         = "test://watched-resource"
  description = "A resource that changes when its file changes"
  mime_type   = "text/plain"
  text        = "Watched resource content"
}

resource_template "template" {
  uri_template = "test://template/{id}/data"
  description  = "A resource template with parameter substitution"
  mime_type    = "application/json"
  text         = jsonencode({ id = args.id, templateTest = true, data = "Data for ID: ${args.id}" })
  completions = {
    id = ["1", "2", "3", "42"]
  }
}

prompt "test_simple_prompt" {
  title       = "Simple Test Prompt"
  description = "A simple prompt without arguments"
  message {
    role = "user"
    text = "This is a simple test prompt."
  }
}

prompt "test_prompt_with_arguments" {
  title       = "Prompt With Arguments"
  description = "A prompt with required arguments"
  argument "arg1" {
    description = "First test argument"
    required    = true
    completions = ["paris", "park", "party", "value1"]
  }
  argument "arg2" {
    description = "Second test argument"
    required    = true
  }
  message {
    role = "user"
    text = "Prompt with arguments: arg1='${args.arg1}', arg2='${args.arg2}'"
  }
}

prompt "test_prompt_with_embedded_resource" {
  title       = "Prompt With Embedded Resource"
  description = "A prompt that includes an embedded resource"
  argument "resourceUri" {
    description = "URI of the resource to embed"
    required    = true
  }
  message {
    role = "user"
    content "resource" {
      uri       = args.resourceUri
      mime_type = "text/plain"
      text      = "Embedded resource content for testing."
    }
  }
  message {
    role = "user"
    text = "Please process the embedded resource above."
  }
}

prompt "test_prompt_with_image" {
  title       = "Prompt With Image"
  description = "A prompt that includes image content"
  message {
    role = "user"
    content "image" {
      data      = filebase64("pixel.png")
      mime_type = "image/png"
    }
  }
  message {
    role = "user"
    text = "Please analyze the image above."
  }
}

# A hand-written JSON Schema 2020-12 input schema ($schema, $defs, $ref,
# allOf/anyOf, if/then/else): input_schema is served exactly as written and
# validated by the full JSON Schema validator.
tool "json_schema_2020_12_tool" {
  description = "Tests JSON Schema 2020-12 keyword preservation"
  input_schema = jsonencode({
    "$schema" = "https://json-schema.org/draft/2020-12/schema"
    type      = "object"
    "$defs" = {
      address = {
        "$anchor" = "addressDef"
        type      = "object"
        properties = {
          street = { type = "string" }
          city   = { type = "string" }
        }
      }
    }
    properties = {
      name          = { type = "string" }
      address       = { "$ref" = "#/$defs/address" }
      contactMethod = { type = "string", enum = ["phone", "email"] }
      phone         = { type = "string" }
      email         = { type = "string" }
    }
    allOf                = [{ anyOf = [{ required = ["phone"] }, { required = ["email"] }] }]
    if                   = { properties = { contactMethod = { const = "phone" } }, required = ["contactMethod"] }
    then                 = { required = ["phone"] }
    else                 = { required = ["email"] }
    additionalProperties = false
  })
  result {
    content "text" {
      text = "ok"
    }
  }
}
