package audit

import (
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// ErrMalformedHead is matched by the error of [Head.UnmarshalText] for
// text that is not a head.
var ErrMalformedHead = errors.New("audit: malformed head")

// headFields are the fields of a head's text form, in order.
var headFields = [...]string{"seq", "first", "length", "mac", "seal"}

// MarshalText encodes h as one line to keep outside the store:
//
//	seq=5 first=1 length=5 mac=<hex> seal=<hex>
//
// The line holds no secret: a MAC and a seal, which only the log's key can
// make or check.
func (h Head) MarshalText() ([]byte, error) {
	return fmt.Appendf(nil, "seq=%d first=%d length=%d mac=%s seal=%s",
		h.Seq, h.First, h.Length, hex.EncodeToString(h.MAC), hex.EncodeToString(h.Seal)), nil
}

// UnmarshalText decodes a line that [Head.MarshalText] wrote, surrounding
// white space allowed. An error matches [ErrMalformedHead].
func (h *Head) UnmarshalText(text []byte) error {
	parts := strings.Fields(string(text))
	if len(parts) != len(headFields) {
		return fmt.Errorf("%w: want %d fields (%s=…), got %d", ErrMalformedHead, len(headFields), strings.Join(headFields[:], "=… "), len(parts))
	}
	var out Head
	for i, p := range parts {
		name, value, ok := strings.Cut(p, "=")
		if !ok || name != headFields[i] {
			return fmt.Errorf("%w: field %d is %q, want %s=…", ErrMalformedHead, i+1, name, headFields[i])
		}
		var err error
		switch name {
		case "seq":
			out.Seq, err = strconv.ParseInt(value, 10, 64)
		case "first":
			out.First, err = strconv.ParseInt(value, 10, 64)
		case "length":
			out.Length, err = strconv.ParseInt(value, 10, 64)
		case "mac":
			out.MAC, err = hex.DecodeString(value)
		case "seal":
			out.Seal, err = hex.DecodeString(value)
		}
		if err != nil {
			return fmt.Errorf("%w: %s: %w", ErrMalformedHead, name, err)
		}
	}
	*h = out
	return nil
}
