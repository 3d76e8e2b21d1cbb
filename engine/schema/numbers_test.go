package schema_test

import (
	"encoding/json"
	"math"
	"testing"
)

// Numbers arrive exact: whole numbers as int64 (every digit of
// 9007199254740993, -0 as 0), others as float64; what no 64-bit type holds
// is refused with a message naming the argument.
func TestValidateExactNumbers(t *testing.T) {
	v := mustCompile(t, `{"type": "object", "properties": {
	  "id":    {"type": "integer"},
	  "n":     {"type": "integer", "minimum": 0},
	  "cap":   {"type": "integer", "maximum": 9007199254740992},
	  "cap3":  {"type": "integer", "exclusiveMaximum": 9007199254740993},
	  "x":     {"type": "number"},
	  "pick":  {"type": "integer", "enum": [9007199254740993]},
	  "every": {"type": "integer", "multipleOf": 3},
	  "list":  {"type": "array", "items": {"type": "number"}}
	}, "additionalProperties": false}`)
	for _, tc := range []struct {
		name, args string
		arg        string
		want       any
		err        string
	}{
		{"beyond 2^53 stays exact", `{"id": 9007199254740993}`, "id", int64(9007199254740993), ""},
		{"written with a fraction", `{"id": 9007199254740993.0}`, "id", int64(9007199254740993), ""},
		{"escaped key takes the slow path", `{"id": 9007199254740993, "x": 1, "list": ["\u0031"]}`, "", nil, `argument "list[0]" must be a number, got string "1"`},
		{"int64 max", `{"id": 9223372036854775807}`, "id", int64(math.MaxInt64), ""},
		{"int64 min", `{"id": -9223372036854775808}`, "id", int64(math.MinInt64), ""},
		{"negative zero is zero", `{"n": -0}`, "n", int64(0), ""},
		{"negative zero with a fraction", `{"n": -0.0}`, "n", int64(0), ""},
		{"number negative zero", `{"x": -0.0}`, "x", int64(0), ""},
		{"fraction stays a float", `{"x": 0.25}`, "x", 0.25, ""},
		{"exact maximum", `{"cap": 9007199254740993}`, "", nil, `argument "cap" must be at most 9007199254740992, got 9007199254740993`},
		{"exact integer bound", `{"cap3": 9007199254740993}`, "", nil, `argument "cap3" must be less than 9007199254740993, got 9007199254740993`},
		{"below the exact integer bound", `{"cap3": 9007199254740992}`, "cap3", int64(9007199254740992), ""},
		{"exact enum", `{"pick": 9007199254740992}`, "", nil, `argument "pick" must be one of 9007199254740993, got 9007199254740992`},
		{"exact enum match", `{"pick": 9007199254740993}`, "pick", int64(9007199254740993), ""},
		{"exact multipleOf", `{"every": 9007199254740993}`, "every", int64(9007199254740993), ""},
		{"exact multipleOf refused", `{"every": 9007199254740994}`, "", nil, `argument "every" must be a multiple of 3, got 9007199254740994`},
		{"beyond int64", `{"id": 9223372036854775808}`, "", nil, `argument "id" is out of range: an integer must be between -9223372036854775808 and 9223372036854775807, got 9223372036854775808`},
		{"far beyond int64", `{"id": -1e30}`, "", nil, `argument "id" is out of range: an integer must be between -9223372036854775808 and 9223372036854775807, got -1e+30`},
		{"beyond float64", `{"x": 1e400}`, "", nil, `argument "x" is out of range: 1e400 is beyond what a 64-bit float holds (about ±1.8e308)`},
		{"beyond float64 in a list", `{"list": [1, -1e400]}`, "", nil, `argument "list[1]" is out of range: -1e400 is beyond what a 64-bit float holds (about ±1.8e308)`},
		{"beyond float64 on the slow path", `{"x": 1e400, "s\u0031": 1}`, "", nil, `argument "x" is out of range: 1e400 is beyond what a 64-bit float holds (about ±1.8e308)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args, err := v.Validate(json.RawMessage(tc.args))
			if tc.err != "" {
				if err == nil || err.Error() != tc.err {
					t.Fatalf("err = %v\nwant %s", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := args[tc.arg]; got != tc.want {
				t.Fatalf("%s = %#v, want %#v", tc.arg, got, tc.want)
			}
		})
	}
}
