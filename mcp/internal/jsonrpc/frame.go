package jsonrpc

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
)

// ErrFrameTooLarge is returned by [FrameReader.Next] for a line longer than
// the reader's limit. The rest of the line is skipped, so the stream stays in
// step and the next frame can still be read.
var ErrFrameTooLarge = errors.New("frame too large")

// FrameReader splits a byte stream into newline-delimited frames, as MCP's
// stdio transport frames its messages. A frame longer than the limit is
// reported without being buffered whole, so a hostile peer cannot make the
// reader allocate without bound.
type FrameReader struct {
	r   *bufio.Reader
	max int
	buf []byte
}

// NewFrameReader returns a reader of frames of at most max bytes from r.
func NewFrameReader(r io.Reader, max int) *FrameReader {
	return &FrameReader{r: bufio.NewReaderSize(r, 64<<10), max: max}
}

// Next returns the next non-blank frame, without its line ending. The slice
// is valid until the next call. At the end of the stream it returns io.EOF;
// a final frame without a newline is still returned first.
func (f *FrameReader) Next() ([]byte, error) {
	for {
		f.buf = f.buf[:0]
		tooLarge := false
		for {
			chunk, err := f.r.ReadSlice('\n')
			if !tooLarge {
				if len(f.buf)+len(chunk) > f.max+2 { // +2: room for "\r\n"
					tooLarge = true
					f.buf = f.buf[:0]
				} else {
					f.buf = append(f.buf, chunk...)
				}
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
			return nil, fmt.Errorf("%w: longer than %d bytes", ErrFrameTooLarge, f.max)
		}
		line := bytes.TrimRight(f.buf, "\r\n")
		if len(line) > f.max {
			return nil, fmt.Errorf("%w: longer than %d bytes", ErrFrameTooLarge, f.max)
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		return line, nil
	}
}
