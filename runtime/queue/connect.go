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
