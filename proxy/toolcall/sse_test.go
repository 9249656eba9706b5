package toolcall

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
	"time"
)

const (
	listTwo   = `{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"a"},{"name":"b"}]}}`
	listOnlyB = `{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"b"}]}}`
)

func TestToolsListFilter(t *testing.T) {
	cases := []struct {
		name string
		in   string
		want string
	}{
		{"one event filtered", "event: message\ndata: " + listTwo + "\n\n", "event: message\ndata: " + listOnlyB + "\n\n"},
		{"other events unchanged byte for byte",
			": keep-alive\n\nid: 7\ndata:{\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\"}\r\n\r\nretry: 100\n\n",
			": keep-alive\n\nid: 7\ndata:{\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\"}\r\n\r\nretry: 100\n\n"},
		{"multi-event stream", "data: {\"jsonrpc\":\"2.0\",\"method\":\"ping\",\"id\":0}\n\nid: 1\ndata: " + listTwo + "\n\ndata: x\n\n",
			"data: {\"jsonrpc\":\"2.0\",\"method\":\"ping\",\"id\":0}\n\nid: 1\ndata: " + listOnlyB + "\n\ndata: x\n\n"},
		{"multi-line data joined, written as one line",
			"id: 3\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"tools\":[\ndata: {\"name\":\"a\"},\ndata:{\"name\":\"b\"}]}}\nevent: message\n\n",
			"id: 3\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"tools\":[{\"name\":\"b\"}]}}\nevent: message\n\n"},
		{"CRLF line endings", "data: " + listTwo + "\r\n\r\n", "data: " + listOnlyB + "\r\n\r\n"},
		{"CR line endings", "data: " + listTwo + "\r\rdata: y\r\r", "data: " + listOnlyB + "\r\rdata: y\r\r"},
		{"no space after the colon", "data:" + listTwo + "\n\n", "data: " + listOnlyB + "\n\n"},
		{"nothing dropped: unchanged", "data:  " + listOnlyB + "\n\n", "data:  " + listOnlyB + "\n\n"},
		{"byte order mark kept", "\xef\xbb\xbfdata: " + listTwo + "\n\n", "\xef\xbb\xbfdata: " + listOnlyB + "\n\n"},
		{"unfinished event at the end passes through", "data: " + listTwo + "\n", "data: " + listTwo + "\n"},
		{"not SSE at all", "hello world", "hello world"},
		{"empty", "", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, r := range []struct {
				name string
				wrap func(io.Reader) io.Reader
			}{
				{"whole", func(r io.Reader) io.Reader { return r }},
				{"one byte at a time", iotest.OneByteReader},
				{"data with EOF", iotest.DataErrReader},
			} {
				f := NewToolsListFilter(io.NopCloser(r.wrap(strings.NewReader(tc.in))), allowOnly("b"))
				got, err := io.ReadAll(iotest.OneByteReader(f))
				if err != nil || string(got) != tc.want {
					t.Errorf("%s: got %q, %v\nwant %q", r.name, got, err, tc.want)
				}
			}
		})
	}
}

// TestToolsListFilterStreams reads the first event before the writer sends
// the second.
func TestToolsListFilterStreams(t *testing.T) {
	pr, pw := io.Pipe()
	f := NewToolsListFilter(pr, allowOnly("b"))
	first := make(chan struct{})
	go func() {
		_, _ = io.WriteString(pw, "data: "+listTwo+"\n")
		_, _ = io.WriteString(pw, "\n")
		select {
		case <-first:
		case <-time.After(5 * time.Second):
		}
		_, _ = io.WriteString(pw, "data: second\n\n")
		pw.Close()
	}()
	want := "data: " + listOnlyB + "\n\n"
	got := make([]byte, len(want))
	done := make(chan error, 1)
	go func() { _, err := io.ReadFull(f, got); done <- err }()
	select {
	case err := <-done:
		if err != nil || string(got) != want {
			t.Fatalf("first event: got %q, %v; want %q", got, err, want)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("first event: not readable before the second was written")
	}
	close(first)
	rest, err := io.ReadAll(f)
	if err != nil || string(rest) != "data: second\n\n" {
		t.Errorf("rest: got %q, %v; want the second event", rest, err)
	}
}

type closeRecorder struct {
	io.Reader
	closed bool
}

func (c *closeRecorder) Close() error { c.closed = true; return nil }

func TestToolsListFilterClose(t *testing.T) {
	src := &closeRecorder{Reader: strings.NewReader("")}
	if err := NewToolsListFilter(src, allowAll).Close(); err != nil || !src.closed {
		t.Errorf("got err %v, closed %v; want nil, true", err, src.closed)
	}
}

func TestToolsListFilterError(t *testing.T) {
	boom := errors.New("boom")
	src := io.MultiReader(strings.NewReader("data: a\n\ndata: partial"), iotest.ErrReader(boom))
	got, err := io.ReadAll(NewToolsListFilter(io.NopCloser(src), allowAll))
	if string(got) != "data: a\n\ndata: partial" || !errors.Is(err, boom) {
		t.Errorf("got %q, %v; want everything read, then boom", got, err)
	}
}

// TestToolsListFilterLargeEvent: an event beyond maxEvent passes through.
func TestToolsListFilterLargeEvent(t *testing.T) {
	big := "data: " + listTwo + "\n" + ":" + strings.Repeat("x", maxEvent) + "\n\ndata: " + listTwo + "\n\n"
	got, err := io.ReadAll(NewToolsListFilter(io.NopCloser(strings.NewReader(big)), allowOnly("b")))
	want := "data: " + listTwo + "\n" + ":" + strings.Repeat("x", maxEvent) + "\n\ndata: " + listOnlyB + "\n\n"
	if err != nil || !bytes.Equal(got, []byte(want)) {
		t.Errorf("got %d bytes, %v; want %d bytes, the large event unchanged and the next filtered", len(got), err, len(want))
	}
}
