package reload

import "time"

// Reload results, as LastReload reports them.
const (
	ResultNone    = "none"    // no reload since start
	ResultSuccess = "success" // the newest config is serving
	ResultFailure = "failure" // the newest config has errors; the last good one serves
)

// Generation is the number of configs loaded since start: 1 for the first,
// one more for every successful reload.
func (s Status) Generation() int { return s.Reloads + 1 }

// LastReload says when the latest reload happened and how it ended.
func (s Status) LastReload() (time.Time, string) {
	switch {
	case s.Err != "":
		return s.LastFailure, ResultFailure
	case s.Reloads > 0:
		return s.LastOK, ResultSuccess
	}
	return time.Time{}, ResultNone
}
