package audit

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
)

// rowMAC computes the MAC of r chained to prev. Every field is
// length-prefixed, so no two different rows encode alike.
func rowMAC(key []byte, r Row, prev []byte) []byte {
	m := hmac.New(sha256.New, key)
	var buf []byte
	buf = appendString(buf, "andon audit row v1")
	buf = binary.BigEndian.AppendUint64(buf, uint64(r.Seq))
	buf = binary.BigEndian.AppendUint64(buf, uint64(r.Time.UnixNano()))
	for _, s := range []string{string(r.Action), r.Purpose, r.RunID, r.Method, r.Host, r.Path} {
		buf = appendString(buf, s)
	}
	buf = binary.BigEndian.AppendUint64(buf, uint64(int64(r.Status)))
	if r.OK {
		buf = append(buf, 1)
	} else {
		buf = append(buf, 0)
	}
	buf = appendString(buf, r.Reason)
	buf = binary.BigEndian.AppendUint64(buf, uint64(r.Duration))
	buf = appendString(buf, string(prev))
	m.Write(buf)
	return m.Sum(nil)
}

// headSeal computes the seal of a head: over every field, so that a sealed
// head cannot be lengthened, shortened or moved to another chain.
func headSeal(key []byte, h Head) []byte {
	m := hmac.New(sha256.New, key)
	buf := appendString(nil, "andon audit head v2")
	for _, n := range []int64{h.Seq, h.First, h.Length} {
		buf = binary.BigEndian.AppendUint64(buf, uint64(n))
	}
	buf = appendString(buf, string(h.MAC))
	m.Write(buf)
	return m.Sum(nil)
}

// headSealV1 computes the seal of a head written before heads recorded
// their first sequence number and length (First and Length are 0).
func headSealV1(key []byte, seq int64, mac []byte) []byte {
	m := hmac.New(sha256.New, key)
	buf := appendString(nil, "andon audit head v1")
	buf = binary.BigEndian.AppendUint64(buf, uint64(seq))
	buf = appendString(buf, string(mac))
	m.Write(buf)
	return m.Sum(nil)
}

// sealed reports whether h is a head sealed with key: a v2 seal, or the v1
// seal of a head that records neither its first sequence number nor its
// length.
func sealed(key []byte, h Head) bool {
	if h.First == 0 && h.Length == 0 && hmac.Equal(h.Seal, headSealV1(key, h.Seq, h.MAC)) {
		return true
	}
	return hmac.Equal(h.Seal, headSeal(key, h))
}

func appendString(buf []byte, s string) []byte {
	buf = binary.AppendUvarint(buf, uint64(len(s)))
	return append(buf, s...)
}
