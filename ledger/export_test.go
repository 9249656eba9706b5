package ledger

import (
	"context"
	"io"
)

// VerifyInBatches is Ledger.Verify with its batch size and the number of
// batches in flight chosen by the test, so that a short chain crosses
// every path of the pipeline whatever the machine's core count.
func VerifyInBatches(ctx context.Context, l *Ledger, agentID string, batch, depth int) (Report, error) {
	return l.verify(ctx, agentID, batch, depth)
}

// VerifyStreamInBatches is VerifyStream with its batch size and the number
// of batches in flight chosen by the test.
func VerifyStreamInBatches(r io.Reader, batch, depth int) (Report, error) {
	return verifyStream(r, batch, depth)
}
