package shape

import (
	"sync"
	"testing"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/types"
)

// compile gives the program (or the error) expr.Compile gives, and may run
// concurrently.
func TestCompileMatchesExpr(t *testing.T) {
	env := types.Map{"args": types.Map{"q": types.Any, "limit": types.Any}, "body": types.Any, "status": types.Any}
	srcs := []string{
		`body`, `body.login`, `args.q`, `{login: body.login, count: len(body.items), q: args.q}`,
		`map(filter(body.items, !.private), .stars * 2)`, `status >= 400 || body.login == ""`,
		`upper(args.q) + "!"`, `args.limit ?? 10`, `let x = 1; x + 2`, `body.items[0].name`,
		`sum(map(body.items, .n)) / len(body.items)`, `"a" in ["a", "b"]`, `1 + 2 * 3`, `now()`,
		`toJSON(body)`, `body?.missing?.deeper`, `status == 200 ? "ok" : "failed"`,
		// errors
		`args.nope`, `nofunc(1)`, `body.`, `1 +`, `len()`, `{a: }`, `"unterminated`,
	}
	for _, src := range srcs {
		want, wantErr := expr.Compile(src, expr.Env(env))
		got, budgeted, gotErr := compile(src, env)
		if (wantErr == nil) != (gotErr == nil) || (wantErr != nil && wantErr.Error() != gotErr.Error()) {
			t.Errorf("%s: error %v, expr.Compile says %v", src, gotErr, wantErr)
			continue
		}
		// Metered expressions compile to other programs (budget.go);
		// TestMeteredMatchesExpr checks that they compute the same.
		if wantErr == nil && !budgeted && got.Disassemble() != want.Disassemble() {
			t.Errorf("%s: program\n%s\nexpr.Compile gives\n%s", src, got.Disassemble(), want.Disassemble())
		}
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, src := range srcs {
				compile(src, env)
			}
		}()
	}
	wg.Wait()
}
