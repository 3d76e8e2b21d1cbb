package serve_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcpd/mcpd/engine/buildinfo"
	"github.com/mcpd/mcpd/engine/loader"
	"github.com/mcpd/mcpd/engine/serve"
	"github.com/mcpd/mcpd/engine/sharedstate/sharedstatetest"
	"github.com/mcpd/mcpd/engine/snapshot"
	"github.com/mcpd/mcpd/engine/telemetry"
)

func processCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkRateLimitedCall is a stateless tools/call over HTTP from 8
// connections at once, of a tool without limits ("unlimited"), with
// per_tool and per_caller rates checked in this process ("memory") and in
// Redis ("redis": one EVALSHA per call). cpu-ns/op is the whole process's
// CPU per call, the client's included (the same in every case); ns/op
// includes waiting for Redis. bench/run.sh measures the server alone.
func BenchmarkRateLimitedCall(b *testing.B) {
	url := sharedstatetest.URL(b)
	prefix := sharedstatetest.Prefix(b, url)
	limited := func(extra string) string {
		return strings.Replace(staticConfig, "  result {", "  rate_limit {\n    per_tool   = \"1000000/s\"\n    per_caller = \"1000000/s\"\n"+extra+"  }\n  result {", 1)
	}
	for _, bc := range []struct{ name, config string }{
		{"unlimited", staticConfig},
		{"memory", limited("")},
		{"redis", fmt.Sprintf("server {\n  state {\n    redis      = %q\n    key_prefix = %q\n  }\n}\n", url, prefix) + limited("")},
	} {
		b.Run(bc.name, func(b *testing.B) {
			dir := b.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "tools.hcl"), []byte(bc.config), 0o644); err != nil {
				b.Fatal(err)
			}
			l := loader.Load([]string{dir}, newFake().registry(), nil, "test")
			if l.Snapshot == nil {
				b.Fatalf("config does not load: %v", l.Diagnostics)
			}
			cur := &snapshot.Current{}
			cur.Swap(l.Snapshot)
			defer cur.Load().Close()
			opts := serve.HTTPOptions{
				SessionTimeout: 10 * time.Minute, MaxSessions: 1000, MaxInflight: 64, MaxBody: 4 << 20,
				MaxInflightBytes: 64 << 20, ReadTimeout: 30 * time.Second, WriteTimeout: 30 * time.Second,
			}
			m := telemetry.NewMetricsFor(buildinfo.Read("bench", ""))
			srv := serve.New(cur, serve.Options{Logger: quiet, Metrics: m, MaxInflight: 64, OutputBudget: 256 << 20})
			mux := http.NewServeMux()
			mux.Handle("/mcp", srv.HTTPHandler(opts))
			ts := httptest.NewServer(m.HTTPMiddleware(mux))
			defer ts.Close()
			body := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"static","arguments":{},"_meta":{"io.modelcontextprotocol/protocolVersion":"` + modern + `","io.modelcontextprotocol/clientCapabilities":{}}}}`
			b.SetParallelism(4)
			b.ReportAllocs()
			start := processCPU()
			b.RunParallel(func(pb *testing.PB) {
				c := dialBench(b, ts.Listener.Addr().String(), true)
				defer c.nc.Close()
				req := c.request(body, "tools/call", "static")
				for pb.Next() {
					if out := c.roundTrip(req); !strings.Contains(out, "This is a static response.") {
						b.Fatalf("unexpected answer %q", out)
					}
				}
			})
			b.ReportMetric(float64(processCPU()-start)/float64(b.N), "cpu-ns/op")
		})
	}
}
