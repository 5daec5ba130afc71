package oauth_test

import (
	"testing"

	"go.uber.org/goleak"
)

// The Transport starts a goroutine per shared token leg and the tests start
// loopback servers: none may outlive its test.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
