package queue

import (
	"fmt"
	"regexp"
	"strconv"
)

// A job's id is <batch>.<index>, and its batch and index are tokens of NATS
// subjects (agentspec.jobs.S.<batch>.<index>, agentspec.results.S.<outcome>.
// <batch>.<index>): a batch id with a ".", a "*", a ">" or a space in it
// would make a subject that no stream takes, or one that names other jobs.
// Submitters make batch ids with nuid (22 letters and digits); the alphabet
// allowed is that of stream names, letters, digits, _ and -, up to
// maxBatchID characters. Indexes are a job's place in its batch.

const (
	// MaxBatchJobs bounds the jobs of one batch; indexes run below it.
	MaxBatchJobs = 1_000_000
	// maxBatchID bounds a batch id's length.
	maxBatchID = 64
)

var batchIDPattern = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// checkBatchID reports what is wrong with a batch id, if anything.
func checkBatchID(batch string) error {
	switch {
	case batch == "":
		return fmt.Errorf("no batch id")
	case len(batch) > maxBatchID:
		return fmt.Errorf("batch id %.20q... is longer than %d characters", batch, maxBatchID)
	case !batchIDPattern.MatchString(batch):
		return fmt.Errorf("batch id %q: only letters, digits, _ and - are allowed", batch)
	}
	return nil
}

// jobID is the id of the job at index in batch.
func jobID(batch string, index int) string { return batch + "." + strconv.Itoa(index) }

// checkIDs reports what is wrong with the job's id, batch and index, and with
// the object its shipped workspace is named by (the job's id too): nothing
// built from them may be other than the job's own subjects and names.
func (j *Job) checkIDs() error {
	if err := checkBatchID(j.Batch); err != nil {
		return err
	}
	if j.Index < 0 || j.Index >= MaxBatchJobs {
		return fmt.Errorf("job index %d: must be from 0 to %d", j.Index, MaxBatchJobs-1)
	}
	if want := jobID(j.Batch, j.Index); j.ID != want {
		return fmt.Errorf("job id %.80q: must be %s, its batch and index", j.ID, want)
	}
	if j.Ship != nil && j.Ship.Object != j.ID {
		return fmt.Errorf("shipped workspace %.80q: must be named %s, as its job", j.Ship.Object, j.ID)
	}
	return nil
}
