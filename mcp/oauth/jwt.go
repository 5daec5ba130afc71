package oauth

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	_ "crypto/sha256" // crypto.SHA256.New
	_ "crypto/sha512" // crypto.SHA384.New, crypto.SHA512.New
	"encoding/asn1"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"time"
)

// assertionLifetime is how long a client assertion is valid.
const assertionLifetime = 5 * time.Minute

// clientAssertion signs the private_key_jwt client assertion (RFC 7523
// §2.2, §3): iss and sub the client_id, aud the authorization server's
// issuer identifier, a short expiry and a unique jti. It is a compact JWS
// written here rather than with a JOSE library: one signature with a key
// the caller holds, and nothing parsed.
func (t *Transport) clientAssertion(clientID, audience string) (string, error) {
	key := t.Client.PrivateKey
	if key == nil {
		return "", errors.New("oauth: private_key_jwt needs ClientConfig.PrivateKey")
	}
	alg, h, err := signingAlg(key)
	if err != nil {
		return "", err
	}
	header := map[string]string{"alg": alg, "typ": "JWT"}
	if t.Client.KeyID != "" {
		header["kid"] = t.Client.KeyID
	}
	now := time.Now()
	claims := map[string]any{
		"iss": clientID,
		"sub": clientID,
		"aud": audience,
		"iat": now.Unix(),
		"exp": now.Add(assertionLifetime).Unix(),
		"jti": randomString(),
	}
	hb, err := json.Marshal(header)
	if err != nil {
		return "", err
	}
	cb, err := json.Marshal(claims)
	if err != nil {
		return "", err
	}
	input := base64.RawURLEncoding.EncodeToString(hb) + "." + base64.RawURLEncoding.EncodeToString(cb)
	hh := h.New()
	hh.Write([]byte(input))
	digest := hh.Sum(nil)
	sig, err := sign(key, h, digest)
	if err != nil {
		return "", fmt.Errorf("oauth: signing the client assertion: %w", err)
	}
	return input + "." + base64.RawURLEncoding.EncodeToString(sig), nil
}

// signingAlg is the JWS algorithm and hash for key.
func signingAlg(key crypto.Signer) (string, crypto.Hash, error) {
	switch k := key.Public().(type) {
	case *ecdsa.PublicKey:
		switch k.Curve {
		case elliptic.P256():
			return "ES256", crypto.SHA256, nil
		case elliptic.P384():
			return "ES384", crypto.SHA384, nil
		case elliptic.P521():
			return "ES512", crypto.SHA512, nil
		}
	case *rsa.PublicKey:
		return "RS256", crypto.SHA256, nil
	}
	return "", 0, fmt.Errorf("oauth: unsupported private key type %T for private_key_jwt", key.Public())
}

// sign signs digest with key: for ECDSA, the JWS form (r and s, each the
// curve's size, big-endian; RFC 7518 §3.4), not ASN.1.
func sign(key crypto.Signer, h crypto.Hash, digest []byte) ([]byte, error) {
	if pub, ok := key.Public().(*ecdsa.PublicKey); ok {
		der, err := key.Sign(rand.Reader, digest, h)
		if err != nil {
			return nil, err
		}
		return ecdsaJWS(der, (pub.Curve.Params().BitSize+7)/8)
	}
	return key.Sign(rand.Reader, digest, h)
}

// ecdsaJWS converts an ASN.1 ECDSA signature to r||s of size bytes each.
func ecdsaJWS(der []byte, size int) ([]byte, error) {
	var sig struct{ R, S *big.Int }
	rest, err := asn1.Unmarshal(der, &sig)
	if err != nil || len(rest) > 0 || sig.R.Sign() <= 0 || sig.S.Sign() <= 0 ||
		sig.R.BitLen() > 8*size || sig.S.BitLen() > 8*size {
		return nil, errors.New("malformed ECDSA signature")
	}
	out := make([]byte, 2*size)
	sig.R.FillBytes(out[:size])
	sig.S.FillBytes(out[size:])
	return out, nil
}
