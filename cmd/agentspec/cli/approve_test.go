package cli

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentspec/agentspec/capabilities"
)

// change is a ChangeRequest as any capability's.
type change struct {
	capabilities.Veto
	path string
}

func (*change) Kind() string { return "test.change" }
func (c *change) Describe() capabilities.ChangeDescription {
	return capabilities.ChangeDescription{Summary: "write " + c.path}
}

// prompts signals each question an approver shows.
type prompts chan struct{}

func (p prompts) Write(b []byte) (int, error) {
	if strings.Contains(string(b), "Apply this change?") {
		p <- struct{}{}
	}
	return len(b), nil
}

// On a terminal, a line typed before a question was shown (while the model
// worked, say) is not its answer: it would approve a change nobody had
// seen. Only a line read after the question answers it.
func TestApproveDropsLinesTypedBeforeTheQuestion(t *testing.T) {
	t.Parallel()
	in, typed := io.Pipe()
	defer typed.Close()
	shown := make(prompts, 1)
	a := &approver{in: in, out: shown}
	a.start()
	// Written whole only once the reader has read them: before the question.
	ahead := make(chan error, 1)
	go func() {
		_, err := io.WriteString(typed, "y\n")
		if err == nil {
			_, err = io.WriteString(typed, "y\n")
		}
		ahead <- err
	}()
	require.NoError(t, within(t, ahead), "both lines typed ahead are read before any question")
	time.Sleep(100 * time.Millisecond) // the reader stamps the lines as read

	first := &change{path: "a.md"}
	asked := make(chan error, 1)
	go func() { asked <- a.listen(context.Background(), first) }()
	<-shown
	// The typed-ahead y's are dropped: the question still waits, and the
	// answer given now decides it.
	_, err := io.WriteString(typed, "n\n")
	require.NoError(t, err)
	require.NoError(t, within(t, asked))
	cancelled, _ := first.Cancelled()
	assert.True(t, cancelled, "the n given after the question declined the change, not the y typed before it")

	second := &change{path: "b.md"}
	go func() { asked <- a.listen(context.Background(), second) }()
	<-shown
	_, err = io.WriteString(typed, "y\n")
	require.NoError(t, err)
	require.NoError(t, within(t, asked))
	cancelled, _ = second.Cancelled()
	assert.False(t, cancelled, "a y given after the question approves it")
}

// Answers that do not come from a terminal are a script: each line answers
// the next question, however early it was read.
func TestApproveScriptedAnswersAreKept(t *testing.T) {
	t.Parallel()
	in, typed := io.Pipe()
	defer typed.Close()
	a := &approver{in: in, out: io.Discard, echo: true}
	a.start()
	_, err := io.WriteString(typed, "y\n")
	require.NoError(t, err)
	time.Sleep(100 * time.Millisecond)
	c := &change{path: "a.md"}
	require.NoError(t, a.listen(context.Background(), c))
	cancelled, _ := c.Cancelled()
	assert.False(t, cancelled)
}

// within waits for what done reports, failing the test if it never comes.
func within(t *testing.T, done chan error) error {
	t.Helper()
	select {
	case err := <-done:
		return err
	case <-time.After(10 * time.Second):
		t.Fatal("it never ended")
		return nil
	}
}
