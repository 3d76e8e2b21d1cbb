# Fixtures of the suite's tasks-* scenarios (the io.modelcontextprotocol/tasks
# extension, SEP-2663): tools with a task block run as tasks for a client that
# declared the extension, and as plain calls for any other.

tool "greet" {
  description = "Says hello; never a task"
  param "name" {
    type        = "string"
    description = "Who to greet"
  }
  result {
    content "text" {
      text = "Hello, ${args.name}!"
    }
  }
}

tool "slow_compute" {
  description = "Sleeps for the given seconds, then answers; a task when the client uses tasks"
  annotations {
    read_only = true
  }
  param "seconds" {
    type        = "integer"
    description = "How long to sleep"
    minimum     = 0
    maximum     = 600
  }
  param "label" {
    type        = "string"
    description = "A label echoed in the result"
    required    = false
    default     = ""
  }
  task {
    mode = "optional"
    ttl  = "10m"
  }
  shell {
    command = ["sleep", args.seconds]
    timeout = "11m"
  }
  result {
    content "text" {
      text = "Computed after ${args.seconds}s ${args.label}"
    }
  }
}

tool "failing_job" {
  description = "Fails with a tool error after a second; runs only as a task"
  task {
    mode = "required"
  }
  shell {
    command = ["sleep", "1"]
  }
  result {
    error_when    = "true"
    error_message = "'the job failed (as this fixture always does)'"
  }
}

# A protocol error inside a task: the tool asks for the client's roots, which
# the suite's tasks client does not offer, so its call ends with -32021 and the
# task with status failed.
tool "protocol_error_job" {
  description = "Ends its task failed with a protocol error (it asks for roots the client lacks)"
  task {
    mode = "optional"
  }
  ask "client_roots" { roots = true }
  result {
    content "text" {
      text = "the client had ${length(inputs.client_roots)} root(s)"
    }
  }
}

tool "confirm_delete" {
  description = "Asks the user to confirm, then reports the (pretend) deletion; nothing is deleted"
  param "filename" {
    type        = "string"
    description = "The file to pretend to delete"
  }
  task {
    mode = "optional"
  }
  ask "confirm" {
    elicit = "Delete ${args.filename}?"
    field "confirm" { type = "boolean" }
  }
  result {
    content "text" {
      text = inputs.confirm.confirm ? "Deleted ${args.filename} (pretend)" : "Kept ${args.filename}"
    }
  }
}

tool "multi_input" {
  description = "Asks two questions at once"
  task {
    mode = "optional"
  }
  ask "first" {
    elicit = "First question"
    field "name" { type = "string" }
  }
  ask "second" {
    elicit = "Second question"
    field "name" { type = "string" }
  }
  result {
    content "text" {
      text = "Answers: ${inputs.first.name}, ${inputs.second.name}"
    }
  }
}

# tasks-mrtr-composition: the question is asked first, through input_required
# rounds of tools/call, and the task is created on the last round; its result
# holds the answer.
tool "test_tool_with_task" {
  description = "Asks for a name first, then greets it as a task"
  task {
    mode = "required"
    asks = "first"
  }
  ask "user_name" {
    elicit = "What is your name?"
    field "name" { type = "string" }
  }
  result {
    content "text" {
      text = "Task with input complete: hello, ${inputs.user_name.name}"
    }
  }
}
