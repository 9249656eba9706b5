package toolcall

import (
	"bytes"
	"encoding/json"
	"io"
)

// maxEvent bounds the bytes of one event held for rewriting. A larger event
// is passed through unchanged, as it arrives.
const maxEvent = 8 << 20

// NewToolsListFilter returns a reader of the event stream (text/event-stream)
// read from rc in which every event whose data is a tools/list result is
// rewritten by FilterToolsList, its data fields then written as one "data:"
// line. Every other event, line and byte passes through unchanged. It
// streams: an event is readable as soon as the blank line ending it has been
// read from rc, and only the current event is held (up to 8 MiB; a larger
// event passes through unfiltered). An unfinished event at the end of the
// stream passes through as it came. Close closes rc.
func NewToolsListFilter(rc io.ReadCloser, allow func(name string) bool) io.ReadCloser {
	return &sseFilter{src: rc, allow: allow, buf: make([]byte, 32<<10), first: true}
}

// sseFilter follows the event stream format of the HTML standard: lines end
// in CRLF, LF or CR; a blank line ends an event; a "data" field's value
// follows the colon and one optional space; multiple data lines are joined
// with "\n".
type sseFilter struct {
	src   io.ReadCloser
	allow func(string) bool
	buf   []byte // read buffer
	in    []byte // unread input, in buf
	event []byte // the current event's bytes so far
	obuf  []byte // backing array for out
	out   []byte // output not yet read
	err   error  // from src, returned once in and event are drained

	lineLen  int  // bytes of the current line so far, without terminator
	afterCR  bool // a CR ended the last line: a LF right after it belongs to it
	overflow bool // the current event outgrew maxEvent and passes through
	first    bool // the next event is the stream's first (may hold a BOM)
}

func (f *sseFilter) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	for empty := 0; ; {
		if len(f.out) > 0 {
			n := copy(p, f.out)
			f.out = f.out[n:]
			return n, nil
		}
		f.out = f.obuf[:0]
		switch {
		case len(f.in) > 0:
			f.scan()
			f.obuf = f.out[:0]
		case f.err != nil:
			if len(f.event) == 0 {
				return 0, f.err
			}
			f.out = append(f.out, f.event...)
			f.obuf, f.event = f.out[:0], f.event[:0]
		default:
			n, err := f.src.Read(f.buf)
			f.in, f.err = f.buf[:n], err
			if n == 0 && err == nil {
				if empty++; empty > 100 {
					return 0, io.ErrNoProgress
				}
			}
		}
	}
}

// Close closes the underlying stream.
func (f *sseFilter) Close() error { return f.src.Close() }

// scan consumes input up to the end of the next event, appending what is
// ready to out.
func (f *sseFilter) scan() {
	for len(f.in) > 0 {
		if f.afterCR {
			f.afterCR = false
			if f.in[0] == '\n' {
				if f.overflow || len(f.event) == 0 {
					f.out = append(f.out, '\n')
				} else {
					f.event = append(f.event, '\n')
				}
				f.in = f.in[1:]
				continue
			}
		}
		i := bytes.IndexAny(f.in, "\r\n")
		if i < 0 {
			f.lineLen += len(f.in)
			f.put(f.in)
			f.in = nil
			return
		}
		blank := f.lineLen+i == 0
		f.afterCR = f.in[i] == '\r'
		f.put(f.in[:i+1])
		f.in, f.lineLen = f.in[i+1:], 0
		if blank {
			f.dispatch()
			return
		}
	}
}

// put adds bytes of the current event.
func (f *sseFilter) put(b []byte) {
	if f.overflow {
		f.out = append(f.out, b...)
		return
	}
	f.event = append(f.event, b...)
	if len(f.event) > maxEvent {
		f.out = append(f.out, f.event...)
		f.event, f.overflow = f.event[:0], true
	}
}

// dispatch emits the event just ended by a blank line.
func (f *sseFilter) dispatch() {
	first := f.first
	f.first = false
	if f.overflow {
		f.overflow = false
		return
	}
	f.out = f.rewrite(f.out, f.event, first)
	f.event = f.event[:0]
}

var bom = []byte("\xef\xbb\xbf")

// rewrite appends the event raw (its bytes, blank line included) to dst,
// rewritten when its data is a tools/list result from which tools are
// dropped.
func (f *sseFilter) rewrite(dst, raw []byte, first bool) []byte {
	lines := raw
	if first && bytes.HasPrefix(lines, bom) {
		lines = lines[len(bom):]
	}
	var payload []byte
	n := 0
	for rest := lines; len(rest) > 0; {
		var line []byte
		line, _, rest = nextLine(rest)
		if v, ok := dataValue(line); ok {
			if n > 0 {
				payload = append(payload, '\n')
			}
			payload = append(payload, v...)
			n++
		}
	}
	if n == 0 || !startsContainer(payload) {
		return append(dst, raw...)
	}
	filtered, ok := FilterToolsList(payload, f.allow)
	if !ok || bytes.Equal(filtered, payload) {
		return append(dst, raw...)
	}
	if bytes.ContainsAny(filtered, "\r\n") {
		var c bytes.Buffer
		if json.Compact(&c, filtered) == nil {
			filtered = c.Bytes()
		}
	}
	dst = append(dst, raw[:len(raw)-len(lines)]...) // the BOM
	written := false
	for rest := lines; len(rest) > 0; {
		var line, term []byte
		line, term, rest = nextLine(rest)
		if _, ok := dataValue(line); !ok {
			dst = append(append(dst, line...), term...)
		} else if !written {
			dst = append(append(append(dst, "data: "...), filtered...), term...)
			written = true
		}
	}
	return dst
}

// nextLine splits b after its first line: the line, its terminator (CRLF,
// LF, CR or none at the end) and the rest.
func nextLine(b []byte) (line, term, rest []byte) {
	i := bytes.IndexAny(b, "\r\n")
	if i < 0 {
		return b, nil, nil
	}
	j := i + 1
	if b[i] == '\r' && j < len(b) && b[j] == '\n' {
		j++
	}
	return b[:i], b[i:j], b[j:]
}

// dataValue returns the value of a "data" field line.
func dataValue(line []byte) ([]byte, bool) {
	field, value, _ := bytes.Cut(line, []byte{':'})
	if string(field) != "data" {
		return nil, false
	}
	if len(value) > 0 && value[0] == ' ' {
		value = value[1:]
	}
	return value, true
}
