package queue

import (
	"errors"
	"fmt"

	"github.com/nats-io/nats.go"
)

// ConnectOptions are how to reach and authenticate to the NATS server; they
// are handed to the NATS client as they are. A user and password or a token
// may also be given in the URL (nats://user:pass@host:4222).
type ConnectOptions struct {
	// Name is the connection's name, as the server's monitoring shows it.
	Name string
	// Creds is a credentials file (a user JWT and its NKey seed).
	Creds string
	// NKey is a file holding an NKey seed, for NKey authentication.
	NKey string
	// TLSCert and TLSKey are a client certificate and its key; TLSCA is the
	// CA certificate that signed the server's. Any of them turns TLS on.
	TLSCert, TLSKey, TLSCA string
}

// FileError is a file of ConnectOptions that cannot be used: one that
// cannot be read, or does not hold what it should.
type FileError struct {
	// Field is the option naming the file: Creds, NKey, TLSCert (for a
	// certificate and key that do not make a pair too), TLSKey or TLSCA.
	Field string
	Path  string
	Err   error
}

func (e *FileError) Error() string { return e.Field + " " + e.Path + ": " + e.Err.Error() }
func (e *FileError) Unwrap() error { return e.Err }

// CheckFiles reads the files o names and checks each as the NATS client
// will use it, without connecting: a credentials file's JWT and seed (a
// nonce is signed with it), an NKey seed, a client certificate and its key,
// a CA certificate. Its error is a *FileError.
func (o ConnectOptions) CheckFiles() error {
	opts := nats.GetDefaultOptions()
	if o.Creds != "" {
		err := nats.UserCredentials(o.Creds)(&opts)
		if err == nil {
			_, err = opts.UserJWT()
		}
		if err == nil {
			_, err = opts.SignatureCB([]byte("agentspec"))
		}
		if err != nil {
			return &FileError{Field: "Creds", Path: o.Creds, Err: err}
		}
	}
	if o.NKey != "" {
		if _, err := nats.NkeyOptionFromSeed(o.NKey); err != nil {
			return &FileError{Field: "NKey", Path: o.NKey, Err: err}
		}
	}
	if o.TLSCert != "" && o.TLSKey != "" {
		if err := nats.ClientCert(o.TLSCert, o.TLSKey)(&opts); err != nil {
			return &FileError{Field: "TLSCert", Path: o.TLSCert, Err: err}
		}
	}
	if o.TLSCA != "" {
		if err := nats.RootCAs(o.TLSCA)(&opts); err != nil {
			return &FileError{Field: "TLSCA", Path: o.TLSCA, Err: err}
		}
	}
	return nil
}

// Connect connects to the NATS server at url (a comma-separated list for a
// cluster). The connection reconnects by itself for as long as it takes.
func Connect(url string, o ConnectOptions) (*nats.Conn, error) {
	if url == "" {
		return nil, errors.New("no NATS server URL")
	}
	opts := []nats.Option{nats.Name(o.Name), nats.MaxReconnects(-1)}
	if o.Creds != "" && o.NKey != "" {
		return nil, errors.New("give one of a credentials file and an NKey seed file, not both")
	}
	if o.Creds != "" {
		opts = append(opts, nats.UserCredentials(o.Creds))
	}
	if o.NKey != "" {
		opt, err := nats.NkeyOptionFromSeed(o.NKey)
		if err != nil {
			return nil, fmt.Errorf("NKey seed file: %w", err)
		}
		opts = append(opts, opt)
	}
	switch {
	case (o.TLSCert == "") != (o.TLSKey == ""):
		return nil, errors.New("a TLS client certificate needs its key, and a key its certificate")
	case o.TLSCert != "":
		opts = append(opts, nats.ClientCert(o.TLSCert, o.TLSKey))
	}
	if o.TLSCA != "" {
		opts = append(opts, nats.RootCAs(o.TLSCA))
	}
	nc, err := nats.Connect(url, opts...)
	if err != nil {
		return nil, fmt.Errorf("connecting to %s: %w", url, err)
	}
	return nc, nil
}
