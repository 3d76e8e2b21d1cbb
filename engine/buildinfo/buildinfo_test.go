package buildinfo

import (
	"runtime/debug"
	"testing"
)

func TestFrom(t *testing.T) {
	stamped := func(version string, settings ...debug.BuildSetting) *debug.BuildInfo {
		return &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: "github.com/mcpd/mcpd", Version: version}, Settings: settings}
	}
	rev := debug.BuildSetting{Key: "vcs.revision", Value: "8873f97f54d9551895f4c98bc75d3b8d8f463b3a"}
	for _, tt := range []struct {
		name         string
		linked, lrev string
		bi           *debug.BuildInfo
		want         Info
		line         string
	}{
		{"no build info", "", "", nil, Info{Version: "dev"}, "dev"},
		{"go build in a checkout", "", "", stamped("(devel)", rev, debug.BuildSetting{Key: "vcs.modified", Value: "false"}),
			Info{Version: "dev", Revision: rev.Value, GoVersion: "go1.26.8"}, "dev (commit 8873f97f54d9, go1.26.8)"},
		{"uncommitted changes", "", "", stamped("(devel)", rev, debug.BuildSetting{Key: "vcs.modified", Value: "true"}),
			Info{Version: "dev", Revision: rev.Value, Modified: true, GoVersion: "go1.26.8"}, "dev (commit 8873f97f54d9, modified, go1.26.8)"},
		{"go install @version", "", "", stamped("v1.2.3"), Info{Version: "v1.2.3", GoVersion: "go1.26.8"}, "v1.2.3 (go1.26.8)"},
		{"linked version wins", "v1.3.0-4-gabc", "", stamped("v1.2.3", rev),
			Info{Version: "v1.3.0-4-gabc", Revision: rev.Value, GoVersion: "go1.26.8"}, "v1.3.0-4-gabc (commit 8873f97f54d9, go1.26.8)"},
		{"go test, go run", "", "", stamped(""), Info{Version: "dev", GoVersion: "go1.26.8"}, "dev (go1.26.8)"},
		{"linked commit, no stamp (a worktree)", "8873f97", rev.Value, stamped("(devel)"),
			Info{Version: "8873f97", Revision: rev.Value, GoVersion: "go1.26.8"}, "8873f97 (commit 8873f97f54d9, go1.26.8)"},
		{"the stamp wins over a linked commit", "", "0123456789abcdef", stamped("(devel)", rev),
			Info{Version: "dev", Revision: rev.Value, GoVersion: "go1.26.8"}, "dev (commit 8873f97f54d9, go1.26.8)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := from(tt.linked, tt.lrev, tt.bi)
			if got != tt.want {
				t.Errorf("from = %+v, want %+v", got, tt.want)
			}
			if s := got.String(); s != tt.line {
				t.Errorf("String = %q, want %q", s, tt.line)
			}
		})
	}
}

// The test binary has build information: its Go version at least.
func TestRead(t *testing.T) {
	if info := Read("", ""); info.GoVersion == "" || info.Version == "" {
		t.Errorf("Read = %+v, want a version and the Go version", info)
	}
}
