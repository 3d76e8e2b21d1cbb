package sharedstate_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mcpd/mcpd/engine/sharedstate"
)

// lyingRedis is a Redis of the test's own that answers PING and refuses
// every rate-limit check with the retry hint (microseconds) it is given:
// what a broken Redis, or a proxy or someone with write access, could send.
func lyingRedis(t *testing.T, retryMicros string) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				r := bufio.NewReader(c)
				for {
					cmd, err := readCommand(r)
					if err != nil {
						return
					}
					var reply string
					switch strings.ToUpper(cmd[0]) {
					case "PING":
						reply = "+PONG\r\n"
					case "HELLO":
						reply = "-ERR unknown command 'HELLO'\r\n"
					case "EVALSHA", "EVAL":
						// One call, one bucket: refused by bucket 1, retry
						// after retryMicros, no tokens reserved.
						reply = "*4\r\n:0\r\n:1\r\n:" + retryMicros + "\r\n:0\r\n"
					default:
						reply = "+OK\r\n"
					}
					if _, err := io.WriteString(c, reply); err != nil {
						return
					}
				}
			}()
		}
	}()
	return "redis://" + ln.Addr().String()
}

// readCommand reads one RESP array of bulk strings.
func readCommand(r *bufio.Reader) ([]string, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return nil, err
	}
	if !strings.HasPrefix(line, "*") {
		return nil, fmt.Errorf("not an array: %q", line)
	}
	n, err := strconv.Atoi(strings.TrimSpace(line[1:]))
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, n)
	for range n {
		hdr, err := r.ReadString('\n')
		if err != nil {
			return nil, err
		}
		size, err := strconv.Atoi(strings.TrimSpace(hdr[1:]))
		if err != nil {
			return nil, err
		}
		buf := make([]byte, size+2)
		if _, err := io.ReadFull(r, buf); err != nil {
			return nil, err
		}
		out = append(out, string(buf[:size]))
	}
	return out, nil
}

// The retry hint of a refused call comes from Redis, and is bounded where
// it enters: never longer than the bucket's interval (the time one token
// takes to refill, the longest a GCRA refusal can last), whatever Redis
// says; a hint too large for a time.Duration is not an overflow.
func TestRetryHintFromRedisBounded(t *testing.T) {
	b := sharedstate.Bucket{Key: "k", Interval: 20 * time.Second, Burst: 3}
	for _, micros := range []string{"10000000000000", "9223372036854775807", "-5", "0"} {
		t.Run(micros, func(t *testing.T) {
			st := sharedstate.Open(mustCompile(t, stateBlock(fmt.Sprintf("redis = %q", lyingRedis(t, micros)))), nil)
			t.Cleanup(func() { st.Close() })
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			i, retry, err := st.Take(ctx, b)
			if err != nil {
				t.Fatal(err)
			}
			if i != 0 || retry < 0 || retry > b.Interval {
				t.Fatalf("Redis said retry in %sµs: refused by %d, retry in %s; want bucket 0, at most %s", micros, i, retry, b.Interval)
			}
		})
	}
}
