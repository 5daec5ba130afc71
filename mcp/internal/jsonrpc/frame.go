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
	// partial: the last Next returned a read error partway through a
	// frame (a read deadline), and buf and tooLarge hold what was read of
	// it, so the next Next goes on with that frame.
	partial, tooLarge bool
}

// NewFrameReader returns a reader of frames of at most max bytes from r.
func NewFrameReader(r io.Reader, max int) *FrameReader {
	return &FrameReader{r: bufio.NewReaderSize(r, 64<<10), max: max}
}

// Next returns the next non-blank frame, without its line ending. The slice
// is valid until the next call. At the end of the stream it returns io.EOF;
// a final frame without a newline is still returned first. After any other
// read error (such as a read deadline that passed), nothing read is lost: the
// next call goes on with the frame that the error interrupted.
func (f *FrameReader) Next() ([]byte, error) {
	for {
		if !f.partial {
			f.buf = f.buf[:0]
			f.tooLarge = false
		}
		f.partial = false
		for {
			chunk, err := f.r.ReadSlice('\n')
			if !f.tooLarge {
				if len(f.buf)+len(chunk) > f.max+2 { // +2: room for "\r\n"
					f.tooLarge = true
					f.buf = f.buf[:0]
				} else {
					f.buf = append(f.buf, chunk...)
				}
			}
			if errors.Is(err, bufio.ErrBufferFull) {
				continue
			}
			if err != nil && err != io.EOF {
				f.partial = true
				return nil, err
			}
			if err == io.EOF && !f.tooLarge && len(f.buf) == 0 {
				return nil, io.EOF
			}
			break
		}
		if f.tooLarge {
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
