package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

const (
	phaseWarmup int32 = iota
	phaseMeasure
	phaseStop
)

// recorder collects one client's measurements.
type recorder struct {
	lat        []time.Duration
	errors     int64
	firstError string
}

func (r *recorder) fail(err error) {
	if r.errors == 0 {
		r.firstError = err.Error()
	}
	r.errors++
}

// window runs the warmup and the measurement; it returns the measured wall
// time and the server's CPU time over it.
func window(o options, pid int, phase *atomic.Int32) (wall, cpu time.Duration, err error) {
	time.Sleep(o.warmup)
	c0, err := cpuTime(pid)
	if err != nil {
		return 0, 0, err
	}
	t0 := time.Now()
	phase.Store(phaseMeasure)
	time.Sleep(o.duration)
	phase.Store(phaseStop)
	wall = time.Since(t0)
	c1, err := cpuTime(pid)
	if err != nil {
		return 0, 0, err
	}
	return wall, c1 - c0, nil
}

// connect opens the client connections a call run uses, after one probe
// request that checks the server answers, and measures the idle RSS in
// between.
func connect(ctx context.Context, o options, srv *server) (conns []conn, idle int64, err error) {
	var dial func() (conn, error)
	switch o.transport {
	case "stdio":
		sc := newStdioConn(srv.stdin, srv.stdout)
		if err := sc.initialize(ctx); err != nil {
			return nil, 0, fmt.Errorf("%w (%s)", err, srv.stderr)
		}
		dial = func() (conn, error) { return shared{sc}, nil }
	default:
		if err := srv.waitHTTP(60 * time.Second); err != nil {
			return nil, 0, err
		}
		modern := o.transport == "http-modern"
		if o.client == "raw" {
			dial = func() (conn, error) { return dialRaw(ctx, srv.addr, modern) }
			break
		}
		hc := newHTTPClient(o.clients)
		url := "http://" + srv.addr + "/mcp"
		dial = func() (conn, error) { return dialHTTP(ctx, hc, url, modern) }
	}
	probe, err := dial()
	if err != nil {
		return nil, 0, err
	}
	if _, err := probe.request(ctx, "tools/list", "", json.RawMessage(`{}`)); err != nil {
		return nil, 0, fmt.Errorf("probe tools/list: %w", err)
	}
	if o.method == "tools/call" {
		if _, err := probe.request(ctx, o.method, o.tool, callParams(o)); err != nil {
			return nil, 0, fmt.Errorf("probe call of %s: %w", o.tool, err)
		}
	}
	probe.close()
	time.Sleep(300 * time.Millisecond)
	idle, _, err = memory(srv.pid)
	if err != nil {
		return nil, 0, err
	}
	for i := 0; i < o.clients; i++ {
		c, err := dial()
		if err != nil {
			return nil, 0, fmt.Errorf("client %d: %w", i, err)
		}
		conns = append(conns, c)
	}
	return conns, idle, nil
}

func callParams(o options) json.RawMessage {
	return paramVariants(o)[0]
}

// paramVariants returns the params of the requests a client sends in turn:
// one, or 1,024 when the arguments hold {seq}, with numbers spread over 1
// to seqMax.
func paramVariants(o options) []json.RawMessage {
	if o.method != "tools/call" {
		return []json.RawMessage{json.RawMessage(`{}`)}
	}
	params := `{"name":` + strconv.Quote(o.tool) + `,"arguments":` + o.args + `}`
	if !strings.Contains(params, "{seq}") {
		return []json.RawMessage{json.RawMessage(params)}
	}
	out := make([]json.RawMessage, 1024)
	for i := range out {
		n := (i*7919)%max(o.seqMax, 1) + 1
		out[i] = json.RawMessage(strings.ReplaceAll(params, "{seq}", strconv.Itoa(n)))
	}
	return out
}

// runCalls is the call and list modes: every client sends requests in a
// loop, each as soon as the previous one is answered.
func runCalls(o options, srv *server) (*result, error) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	conns, idle, err := connect(ctx, o, srv)
	if err != nil {
		return nil, err
	}
	variants := paramVariants(o)
	var phase atomic.Int32
	recs := make([]recorder, len(conns))
	var wg sync.WaitGroup
	for i, c := range conns {
		wg.Add(1)
		go func(c conn, rec *recorder, next int) {
			defer wg.Done()
			defer c.close()
			rec.lat = make([]time.Duration, 0, 1<<14)
			for {
				p := phase.Load()
				if p == phaseStop {
					return
				}
				params := variants[next%len(variants)]
				next++
				t0 := time.Now()
				_, err := c.request(ctx, o.method, o.tool, params)
				d := time.Since(t0)
				if err != nil {
					if ctx.Err() != nil {
						return
					}
					rec.fail(err)
					time.Sleep(time.Millisecond) // no busy loop on a broken server
					continue
				}
				if p == phaseMeasure && phase.Load() == phaseMeasure {
					rec.lat = append(rec.lat, d)
				}
			}
		}(c, &recs[i], i*61)
	}
	wall, cpu, err := window(o, srv.pid, &phase)
	wg.Wait()
	if err != nil {
		return nil, err
	}
	r := summarizeRun(o, recs, wall, cpu)
	r.RSSIdle = idle
	_, r.RSSPeak, _ = memory(srv.pid)
	return r, nil
}

// runSetup is the setup mode: every client opens legacy sessions in a loop
// (initialize, then notifications/initialized: one handshake). Each session
// is closed with DELETE by a separate goroutine, so that sessions do not
// pile up in the server; the DELETEs' server CPU is counted, their time is
// not part of the handshake.
func runSetup(o options, srv *server) (*result, error) {
	if o.transport != "http" {
		return nil, errors.New("-mode setup measures legacy HTTP sessions: use -transport http")
	}
	if err := srv.waitHTTP(60 * time.Second); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	hc := newHTTPClient(o.clients)
	url := "http://" + srv.addr + "/mcp"
	newClient := func() sessionClient {
		if o.client == "raw" {
			return &rawConn{addr: srv.addr}
		}
		return &httpConn{hc: hc, url: url}
	}
	probe := newClient()
	if err := probe.initialize(ctx); err != nil {
		return nil, err
	}
	probe.close()
	time.Sleep(300 * time.Millisecond)
	idle, _, _ := memory(srv.pid)
	var phase atomic.Int32
	recs := make([]recorder, o.clients)
	var deleteErrs recorder
	sessions := make(chan string, 1024)
	deleted := make(chan struct{})
	go func() {
		defer close(deleted)
		d := newClient()
		for id := range sessions {
			d.setSession(id)
			if err := d.deleteSession(ctx); err != nil && ctx.Err() == nil {
				deleteErrs.fail(err)
			}
		}
	}()
	var wg sync.WaitGroup
	for i := range recs {
		wg.Add(1)
		go func(rec *recorder) {
			defer wg.Done()
			c := newClient()
			defer c.close()
			for {
				p := phase.Load()
				if p == phaseStop {
					return
				}
				t0 := time.Now()
				err := c.initialize(ctx)
				d := time.Since(t0)
				if err == nil {
					sessions <- c.getSession()
					c.setSession("")
				}
				if err != nil {
					if ctx.Err() != nil {
						return
					}
					rec.fail(err)
					time.Sleep(time.Millisecond)
					continue
				}
				if p == phaseMeasure && phase.Load() == phaseMeasure {
					rec.lat = append(rec.lat, d)
				}
			}
		}(&recs[i])
	}
	wall, cpu, err := window(o, srv.pid, &phase)
	wg.Wait()
	close(sessions)
	<-deleted
	if err != nil {
		return nil, err
	}
	r := summarizeRun(o, append(recs, deleteErrs), wall, cpu)
	r.RSSIdle = idle
	_, r.RSSPeak, _ = memory(srv.pid)
	return r, nil
}

// sessionClient is what the setup mode needs of a client.
type sessionClient interface {
	initialize(ctx context.Context) error
	deleteSession(ctx context.Context) error
	getSession() string
	setSession(id string)
	close()
}

func (c *httpConn) getSession() string   { return c.session }
func (c *httpConn) setSession(id string) { c.session = id }
func (c *rawConn) getSession() string    { return c.session }
func (c *rawConn) setSession(id string)  { c.session = id }

// runStartup is the startup mode: n times, start the server and time the
// first successful tools/list. Over stdio the requests are written at once
// (the server reads them when it is ready); over HTTP the client polls the
// port every half millisecond, then initializes a session.
func runStartup(o options, command string) (*result, error) {
	recs := make([]recorder, 1)
	rec := &recs[0]
	var rss []int64
	var cpus []float64
	var toolCount int
	for i := 0; i < o.n; i++ {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		t0 := time.Now()
		srv, err := startServer(command, o.cpu, o.transport == "stdio", o.env)
		if err != nil {
			cancel()
			return nil, err
		}
		var res json.RawMessage
		switch o.transport {
		case "stdio":
			sc := newStdioConn(srv.stdin, srv.stdout)
			if err = sc.initialize(ctx); err == nil {
				res, err = sc.request(ctx, "tools/list", "", json.RawMessage(`{}`))
			}
		default:
			if err = pollListen(srv, 10*time.Second); err == nil {
				var c *httpConn
				c, err = dialHTTP(ctx, newHTTPClient(1), "http://"+srv.addr+"/mcp", o.transport == "http-modern")
				if err == nil {
					res, err = c.request(ctx, "tools/list", "", json.RawMessage(`{}`))
				}
			}
		}
		d := time.Since(t0)
		if c, cerr := cpuTimeThreads(srv.pid); cerr == nil && err == nil {
			cpus = append(cpus, ms(c))
		}
		if err == nil {
			rec.lat = append(rec.lat, d)
			var lr struct {
				Tools []json.RawMessage `json:"tools"`
			}
			json.Unmarshal(res, &lr)
			toolCount = len(lr.Tools)
			time.Sleep(200 * time.Millisecond)
			m, _, _ := memory(srv.pid)
			rss = append(rss, m)
		} else {
			rec.fail(fmt.Errorf("%w (%s)", err, srv.stderr))
		}
		srv.stop()
		cancel()
	}
	r := summarizeRun(o, recs, 0, 0)
	r.Ops = int64(len(rec.lat))
	r.Note = fmt.Sprintf("%d tools listed; server CPU to then: median %.1f ms", toolCount, median(cpus))
	r.CPU = median(cpus) / 1000
	if len(rss) > 0 {
		r.RSSIdle = median(rss)
	}
	if r.Errors > 0 {
		return r, fmt.Errorf("%d failed starts; the first: %s", r.Errors, r.FirstError)
	}
	return r, nil
}

// pollListen waits for the server's port as fast as a client reasonably
// would.
func pollListen(srv *server, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if !srv.alive() {
			return fmt.Errorf("server exited: %s", srv.stderr)
		}
		if c, err := dialTCP(srv.addr); err == nil {
			c.Close()
			return nil
		}
		time.Sleep(500 * time.Microsecond)
	}
	return fmt.Errorf("server did not listen within %s", timeout)
}

// runReload is the reload mode: a legacy session listens on its GET stream;
// n times, the config file is rewritten (one tool's description changes)
// and the time until notifications/tools/list_changed arrives is recorded.
// It includes the server's file-watch debounce.
func runReload(o options, command string) (*result, error) {
	if o.transport != "http" {
		return nil, errors.New("-mode reload listens on a legacy session's GET stream: use -transport http")
	}
	if o.template == "" {
		return nil, errors.New("-mode reload needs -config-template")
	}
	tmpl, err := os.ReadFile(o.template)
	if err != nil {
		return nil, err
	}
	if !bytes.Contains(tmpl, []byte("{rev}")) {
		return nil, fmt.Errorf("%s has no {rev} to change", o.template)
	}
	dir, err := os.MkdirTemp("", "loadgen-reload")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "tools.hcl")
	write := func(rev int) error {
		return os.WriteFile(path, bytes.ReplaceAll(tmpl, []byte("{rev}"), []byte(strconv.Itoa(rev))), 0o644)
	}
	if err := write(0); err != nil {
		return nil, err
	}
	srv, err := startServer(strings.ReplaceAll(command, "{config}", path), o.cpu, false, o.env)
	if err != nil {
		return nil, err
	}
	defer srv.stop()
	if err := srv.waitHTTP(10 * time.Second); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	hc := newHTTPClient(2)
	c, err := dialHTTP(ctx, hc, "http://"+srv.addr+"/mcp", false)
	if err != nil {
		return nil, err
	}
	defer c.close()
	notes, err := listen(ctx, hc, c)
	if err != nil {
		return nil, err
	}
	recs := make([]recorder, 1)
	rec := &recs[0]
	for i := 1; i <= o.n; i++ {
		// Drain notifications left over from the previous revision.
		for len(notes) > 0 {
			<-notes
		}
		t0 := time.Now()
		if err := write(i); err != nil {
			return nil, err
		}
		select {
		case t := <-notes:
			rec.lat = append(rec.lat, t.Sub(t0))
		case <-time.After(5 * time.Second):
			rec.fail(fmt.Errorf("revision %d: no tools/list_changed within 5s (%s)", i, srv.stderr))
		}
		time.Sleep(150 * time.Millisecond)
	}
	r := summarizeRun(o, recs, 0, 0)
	r.Ops = int64(len(rec.lat))
	if r.Errors > 0 {
		return r, fmt.Errorf("%d missed notifications; the first: %s", r.Errors, r.FirstError)
	}
	return r, nil
}

// listen opens the session's GET stream and sends the arrival time of
// every tools/list_changed notification on the returned channel.
func listen(ctx context.Context, hc *http.Client, c *httpConn) (<-chan time.Time, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.url, nil)
	if err != nil {
		return nil, err
	}
	req.Header["Accept"] = []string{"text/event-stream"}
	req.Header["Mcp-Session-Id"] = []string{c.session}
	req.Header["Mcp-Protocol-Version"] = []string{legacyVersion}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		return nil, fmt.Errorf("GET stream: HTTP %s", resp.Status)
	}
	out := make(chan time.Time, 16)
	go func() {
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 64<<10), 16<<20)
		for sc.Scan() {
			line := sc.Bytes()
			if bytes.HasPrefix(line, []byte("data:")) && bytes.Contains(line, []byte(`"notifications/tools/list_changed"`)) {
				select {
				case out <- time.Now():
				default:
				}
			}
		}
	}()
	return out, nil
}
