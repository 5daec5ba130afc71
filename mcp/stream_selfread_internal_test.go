package mcp

import (
	"context"
	"io"
	"os"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/andonhq/andon/mcp/internal/jsonrpc"
)

// recordingReceiver passes on what a streamConn hands it (an invalid frame
// and the end of the stream as messages named for them), and says that a
// call waits while waitingCalls is above zero.
type recordingReceiver struct {
	got          chan *jsonrpc.Message
	waitingCalls atomic.Int32
}

func (r *recordingReceiver) receive(m *jsonrpc.Message)                          { r.got <- m }
func (r *recordingReceiver) receiveWithin(_ context.Context, m *jsonrpc.Message) { r.got <- m }
func (r *recordingReceiver) receiveInvalid(de *jsonrpc.DecodeError) {
	r.got <- &jsonrpc.Message{Method: "(invalid: " + de.Error() + ")"}
}
func (r *recordingReceiver) fail(jsonrpc.ID, error) {}
func (r *recordingReceiver) lost(err error) {
	r.got <- &jsonrpc.Message{Method: "(lost: " + err.Error() + ")"}
}
func (r *recordingReceiver) waiting() bool { return r.waitingCalls.Load() > 0 }

// answeredWhen is a call answered once its channel has something.
type answeredWhen chan *jsonrpc.Message

func (a answeredWhen) answered() bool { return len(a) > 0 }

// pipeConn is a streamConn over real pipes, as a subprocess's would be;
// server writes what the client reads.
func pipeConn(t *testing.T, idleAfter time.Duration) (c *streamConn, rcv *recordingReceiver, server *os.File) {
	t.Helper()
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	inR, inW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	rcv = &recordingReceiver{got: make(chan *jsonrpc.Message, 8)} // room for close's lost
	c = newStreamConn(outR, inW, connConfig{receiver: rcv, maxMessageSize: 1 << 20})
	c.rd = outR
	c.idleAfter = idleAfter
	c.closeFunc = func() error {
		inW.Close()
		inR.Close()
		return outR.Close()
	}
	c.start()
	t.Cleanup(func() {
		c.close()
		outW.Close()
	})
	return c, rcv, outW
}

func write(t *testing.T, w io.Writer, s string) {
	t.Helper()
	if _, err := io.WriteString(w, s); err != nil {
		t.Fatal(err)
	}
}

// Once a response leaves no call waiting, the reader goroutine gives up
// reading so that the next caller can read its own reply; what the server
// sends while no caller comes (a notification, a request, its exit) is
// still read, by the reader goroutine taking the role back.
func TestStreamReadsWhatArrivesWhileNoCallWaits(t *testing.T) {
	c, rcv, server := pipeConn(t, idleReadAfter)
	write(t, server, `{"jsonrpc":"2.0","id":1,"result":{}}`+"\n")
	<-rcv.got
	write(t, server, `{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`+"\n")
	if m := <-rcv.got; m.Method != "notifications/tools/list_changed" {
		t.Fatalf("got %+v, want the notification", m)
	}
	if got := c.role.Load(); got != roleLoop {
		t.Errorf("role %d after a notification read while idle, want the reader goroutine's (%d)", got, roleLoop)
	}
}

// A caller reading for itself whose context ends mid-frame gets control
// back, and nothing read is lost: the reader goroutine, which another call
// still waiting needs, reads the rest of that frame and hands it over
// whole.
func TestStreamCallerInterruptedMidFrameLosesNothing(t *testing.T) {
	c, rcv, server := pipeConn(t, time.Hour) // the role stays free for this caller
	write(t, server, `{"jsonrpc":"2.0","id":1,"result":{}}`+"\n")
	<-rcv.got
	for c.role.Load() != roleFree { // the reader goroutine gives the role up after dispatching
		runtime.Gosched()
	}
	rcv.waitingCalls.Store(2) // this caller's call, and another's
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.readFor(ctx, make(answeredWhen))
	}()
	write(t, server, `{"jsonrpc":"2.0","id":2,`) // half of the other call's reply
	for c.role.Load() != roleCaller {
		runtime.Gosched()
	}
	cancel()
	<-done
	rcv.waitingCalls.Store(1) // the cancelled call is forgotten; the other waits
	write(t, server, `"result":{"ok":true}}`+"\n")
	m := <-rcv.got
	if id, _ := m.ID.Int64(); id != 2 || string(m.Result) != `{"ok":true}` {
		t.Fatalf("got %q id %s result %s, want id 2's whole reply", m.Method, m.ID.String(), m.Result)
	}
}
