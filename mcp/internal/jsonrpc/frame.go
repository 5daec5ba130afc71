package jsonrpc

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
)

// ErrFrameTooLarge is matched by the error [FrameReader.Next] returns for a
// line longer than the reader's limit, a [*FrameTooLargeError]. The rest of
// the line is skipped, so the stream stays in step and the next frame can
// still be read.
var ErrFrameTooLarge = errors.New("frame too large")

// FrameTooLargeError reports a frame longer than the reader's limit, which
// was skipped without being buffered whole. ID is the id of the response
// it carried, when that could be read from its first or last bytes (see
// OversizeID), so that the error can end that request alone.
type FrameTooLargeError struct {
	Max int
	ID  ID // valid only for a response whose id was found
}

func (e *FrameTooLargeError) Error() string {
	return fmt.Sprintf("frame too large: longer than %d bytes", e.Max)
}

// Is makes the error match ErrFrameTooLarge.
func (e *FrameTooLargeError) Is(target error) bool { return target == ErrFrameTooLarge }

// How much of an oversize frame is kept to look for its id in.
const (
	oversizeHead = 4 << 10
	oversizeTail = 256
)

// FrameReader splits a byte stream into newline-delimited frames, as MCP's
// stdio transport frames its messages. A frame longer than the limit is
// reported without being buffered whole, so a hostile peer cannot make the
// reader allocate without bound.
type FrameReader struct {
	r          *bufio.Reader
	max        int
	buf        []byte
	head, tail []byte // of an oversize frame
}

// NewFrameReader returns a reader of frames of at most max bytes from r.
func NewFrameReader(r io.Reader, max int) *FrameReader {
	return &FrameReader{r: bufio.NewReaderSize(r, 64<<10), max: max}
}

// Next returns the next non-blank frame, without its line ending. The slice
// is valid until the next call. At the end of the stream it returns io.EOF;
// a final frame without a newline is still returned first. A frame longer
// than the limit is skipped, and a *FrameTooLargeError returned for it.
func (f *FrameReader) Next() ([]byte, error) {
	for {
		f.buf = f.buf[:0]
		tooLarge := false
		for {
			chunk, err := f.r.ReadSlice('\n')
			switch {
			case tooLarge:
				f.tail = keepTail(f.tail, chunk)
			case len(f.buf)+len(chunk) > f.max+2: // +2: room for "\r\n"
				tooLarge = true
				f.head = append(f.head[:0], f.buf[:min(len(f.buf), oversizeHead)]...)
				f.head = append(f.head, chunk[:min(len(chunk), oversizeHead-len(f.head))]...)
				f.tail = keepTail(keepTail(f.tail[:0], f.buf), chunk)
				f.buf = f.buf[:0]
			default:
				f.buf = append(f.buf, chunk...)
			}
			if errors.Is(err, bufio.ErrBufferFull) {
				continue
			}
			if err != nil && err != io.EOF {
				return nil, err
			}
			if err == io.EOF && !tooLarge && len(f.buf) == 0 {
				return nil, io.EOF
			}
			break
		}
		if tooLarge {
			return nil, f.tooLarge(f.head, f.tail)
		}
		line := bytes.TrimRight(f.buf, "\r\n")
		if len(line) > f.max {
			return nil, f.tooLarge(line, line)
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		return line, nil
	}
}

func (f *FrameReader) tooLarge(head, tail []byte) error {
	id, _ := OversizeID(head, bytes.TrimRight(tail, "\r\n"))
	return &FrameTooLargeError{Max: f.max, ID: id}
}

// keepTail appends chunk to tail and keeps the last oversizeTail bytes.
func keepTail(tail, chunk []byte) []byte {
	if len(chunk) >= oversizeTail {
		return append(tail[:0], chunk[len(chunk)-oversizeTail:]...)
	}
	tail = append(tail, chunk...)
	if drop := len(tail) - oversizeTail; drop > 0 {
		tail = tail[:copy(tail, tail[drop:])]
	}
	return tail
}
