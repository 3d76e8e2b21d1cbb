// Package buildinfo says which mcpd a binary is: the version linked in at
// build time, else the module's, and the commit and Go version the Go
// toolchain stamped into the binary. mcpd and mcpd-import print it, and
// /metrics reports it as mcpd_build_info.
package buildinfo

import (
	"fmt"
	"runtime/debug"
	"strings"
)

// Info identifies a build.
type Info struct {
	// Version is what -ldflags "-X main.version=..." linked in, else the
	// module version of a `go install ...@version`, else "dev".
	Version string
	// Revision is the VCS commit `go build` stamps into a binary built in a
	// git checkout (vcs.revision), else the one linked in with -ldflags
	// "-X main.revision=..." (deploy/build-image.sh does, since a git
	// worktree or -buildvcs=false leaves no stamp); "" when neither.
	Revision string
	// Modified: the checkout had uncommitted changes (vcs.modified).
	Modified bool
	// GoVersion is the toolchain that built the binary, e.g. "go1.26.8".
	GoVersion string
}

// Read is the running binary's Info; linked and linkedRevision are the
// version and commit set with -ldflags ("" when none).
func Read(linked, linkedRevision string) Info {
	bi, _ := debug.ReadBuildInfo()
	return from(linked, linkedRevision, bi)
}

// from builds the Info out of a binary's build information (nil when the
// binary has none).
func from(linked, linkedRevision string, bi *debug.BuildInfo) Info {
	info := Info{Version: linked, Revision: linkedRevision}
	if bi == nil {
		if info.Version == "" {
			info.Version = "dev"
		}
		return info
	}
	info.GoVersion = bi.GoVersion
	if info.Version == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		info.Version = bi.Main.Version
	}
	if info.Version == "" {
		info.Version = "dev"
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			info.Revision = s.Value
		case "vcs.modified":
			info.Modified = s.Value == "true"
		}
	}
	return info
}

// String is the line `mcpd version` prints after the program's name:
// "v1.2.3 (commit 8873f97f54d9, go1.26.8)", with ", modified" after the
// commit when the checkout had changes.
func (i Info) String() string {
	var details []string
	if i.Revision != "" {
		c := "commit " + Short(i.Revision)
		if i.Modified {
			c += ", modified"
		}
		details = append(details, c)
	}
	if i.GoVersion != "" {
		details = append(details, i.GoVersion)
	}
	if len(details) == 0 {
		return i.Version
	}
	return fmt.Sprintf("%s (%s)", i.Version, strings.Join(details, ", "))
}

// Short is a commit's first 12 hex digits, as git shows it.
func Short(revision string) string {
	if len(revision) > 12 {
		return revision[:12]
	}
	return revision
}
