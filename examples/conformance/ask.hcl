# The suite's fixtures that ask the client for something (elicitation,
# sampling, roots), declared with ask blocks. One declaration serves both
# eras: a 2025-11-25 session is asked through elicitation/create,
# sampling/createMessage and roots/list; a 2026-07-28 client gets an
# input_required result and retries with its answers.

tool "test_elicitation" {
  description = "Tests server-initiated elicitation (user input request)"
  param "message" {
    type        = "string"
    description = "The message to show the user"
  }
  ask "user" {
    elicit = args.message
    field "username" {
      type        = "string"
      description = "User's response"
    }
    field "email" {
      type        = "string"
      description = "User's email address"
    }
  }
  result {
    content "text" {
      text = "User response: action=accept, content=${jsonencode(inputs.user)}"
    }
  }
}

tool "test_elicitation_sep1034_defaults" {
  description = "Tests elicitation with default values per SEP-1034"
  ask "form" {
    elicit = "Test defaults for primitives"
    field "name" {
      type        = "string"
      description = "User name"
      default     = "John Doe"
    }
    field "age" {
      type        = "integer"
      description = "User age"
      default     = 30
    }
    field "score" {
      type        = "number"
      description = "User score"
      default     = 95.5
    }
    field "status" {
      type        = "string"
      description = "User status"
      enum        = ["active", "inactive", "pending"]
      default     = "active"
    }
    field "verified" {
      type        = "boolean"
      description = "Verification status"
      default     = true
    }
  }
  result {
    content "text" {
      text = "Elicitation completed: action=accept, content=${jsonencode(inputs.form)}"
    }
  }
}

tool "test_elicitation_sep1330_enums" {
  description = "Tests elicitation with enum schema improvements per SEP-1330"
  ask "form" {
    elicit = "Test enum schemas"
    field "untitledSingle" {
      type     = "string"
      enum     = ["option1", "option2", "option3"]
      required = false
    }
    field "titledSingle" {
      type        = "string"
      enum        = ["value1", "value2", "value3"]
      enum_titles = ["First Option", "Second Option", "Third Option"]
      required    = false
    }
    field "legacyEnum" {
      type       = "string"
      enum       = ["opt1", "opt2", "opt3"]
      enum_names = ["Option One", "Option Two", "Option Three"]
      required   = false
    }
    field "untitledMulti" {
      type      = "array"
      min_items = 1
      max_items = 3
      items     = { type = "string", enum = ["option1", "option2", "option3"] }
      required  = false
    }
    field "titledMulti" {
      type        = "array"
      min_items   = 1
      max_items   = 3
      items       = { type = "string", enum = ["value1", "value2", "value3"] }
      enum_titles = ["First Option", "Second Option", "Third Option"]
      required    = false
    }
  }
  result {
    content "text" {
      text = "Elicitation completed: action=accept, content=${jsonencode(inputs.form)}"
    }
  }
}

tool "test_sampling" {
  description = "Tests server-initiated sampling (LLM completion request)"
  param "prompt" {
    type        = "string"
    description = "The prompt to send to the LLM"
  }
  ask "llm" {
    sample     = args.prompt
    max_tokens = 100
  }
  result {
    content "text" {
      text = "LLM response: ${inputs.llm}"
    }
  }
}

# Needs the sampling capability: a client that did not declare it gets
# -32021 (2026-07-28) or a tool error (2025-11-25), and the tool does not run.
tool "test_missing_capability" {
  description = "Requires the sampling client capability; used to verify MissingRequiredClientCapabilityError (-32021)"
  ask "llm" {
    sample     = "Say hello."
    max_tokens = 20
  }
  result {
    content "text" {
      text = "Client declared the sampling capability; tool executed."
    }
  }
}

tool "test_streaming_elicitation" {
  description = "Answers with result frames only: a stateless server never sends requests on a response stream"
  result {
    content "text" {
      text = "stream observed: result frames only, no top-level requests"
    }
  }
}

tool "test_input_required_result_elicitation" {
  description = "MRTR: asks for the caller's name via an in-band elicitation request"
  ask "user_name" {
    elicit = "What is your name?"
    field "name" { type = "string" }
  }
  result {
    content "text" {
      text = "Hello, ${inputs.user_name.name}!"
    }
  }
}

tool "test_input_required_result_sampling" {
  description = "MRTR: asks for an LLM completion via an in-band sampling request"
  ask "capital_question" {
    sample     = "What is the capital of France?"
    max_tokens = 100
  }
  result {
    content "text" {
      text = "Sampling response: ${inputs.capital_question}"
    }
  }
}

tool "test_input_required_result_list_roots" {
  description = "MRTR: asks for the client's roots via an in-band roots/list request"
  ask "client_roots" { roots = true }
  result {
    content "text" {
      text = "Client exposed ${length(inputs.client_roots)} root(s): ${join(", ", [for r in inputs.client_roots : r.uri])}"
    }
  }
}

tool "test_input_required_result_request_state" {
  description = "MRTR: round-trips a signed requestState alongside an elicitation request"
  ask "confirm" {
    elicit = "Please confirm"
    field "ok" { type = "boolean" }
  }
  result {
    content "text" {
      text = "state-ok: requestState received and confirmation accepted"
    }
  }
}

tool "test_input_required_result_multiple_inputs" {
  description = "MRTR: asks for elicitation, sampling and roots input in a single round"
  ask "user_name" {
    elicit = "What is your name?"
    field "name" { type = "string" }
  }
  ask "greeting" {
    sample     = "Generate a greeting"
    max_tokens = 50
  }
  ask "client_roots" { roots = true }
  result {
    content "text" {
      text = "${inputs.greeting} ${inputs.user_name.name} - ${length(inputs.client_roots)} root(s) visible"
    }
  }
}

tool "test_input_required_result_multi_round" {
  description = "MRTR: two elicitation rounds, the second after the first is answered"
  ask "step1" {
    elicit = "Step 1: What is your name?"
    field "name" { type = "string" }
  }
  ask "step2" {
    round  = 2
    elicit = "Step 2: What is your favorite color, ${inputs.step1.name}?"
    field "color" { type = "string" }
  }
  result {
    content "text" {
      text = "Multi-round complete: ${inputs.step1.name} likes ${inputs.step2.color}"
    }
  }
}

tool "test_input_required_result_tampered_state" {
  description = "MRTR: refuses a requestState that was altered"
  ask "confirm" {
    elicit = "Please confirm"
    field "ok" { type = "boolean" }
  }
  result {
    content "text" {
      text = "state-ok: requestState received and confirmation accepted"
    }
  }
}

# Each question is optional: asked only when the client declared the
# capability to answer it.
tool "test_input_required_result_capabilities" {
  description = "MRTR: only asks for the kinds of input the client declared it can give"
  ask "user_name" {
    elicit   = "What is your name?"
    optional = true
    field "name" { type = "string" }
  }
  ask "greeting" {
    sample     = "Generate a short greeting"
    max_tokens = 50
    optional   = true
  }
  ask "client_roots" {
    roots    = true
    optional = true
  }
  result {
    content "text" {
      text = "Capability-aware input requests fulfilled"
    }
  }
}

prompt "test_input_required_result_prompt" {
  description = "MRTR: prompts/get asks for context before rendering"
  ask "user_context" {
    elicit = "What context should the prompt use?"
    field "context" { type = "string" }
  }
  message {
    role = "user"
    text = "Context: ${inputs.user_context.context}"
  }
}
