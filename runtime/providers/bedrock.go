package providers

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
	"github.com/aws/smithy-go/auth/bearer"
	"github.com/aws/smithy-go/logging"
	smithyhttp "github.com/aws/smithy-go/transport/http"
	"github.com/tmc/langchaingo/llms"
)

// bedrockModel is Bedrock's Converse API on aws-sdk-go-v2. Requests are
// signed with SigV4 from the standard credential chain, or carry a Bedrock
// API key as a bearer token; Converse and ConverseStream (AWS event-stream
// framing) are read into one response with tool calls, reasoning blocks
// with their signatures, usage and the stop reason.
type bedrockModel struct {
	common
	client *bedrockruntime.Client
}

// bedrockAuth names what signs Bedrock requests, for error hints.
const bedrockAuth = "the AWS credentials (AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, AWS_PROFILE) or AWS_BEARER_TOKEN_BEDROCK"

// bedrockGatewayRegion is the region a request with a bearer token is made
// for when none is set: the gateway routes on its own, so the name only
// fills the SDK's required field.
const bedrockGatewayRegion = "us-east-1"

// newBedrock builds the Converse client. A bearer token (the endpoint's
// token) wins; otherwise requests are signed with SigV4 (awsCredentials).
// The region comes from the endpoint (AWS_REGION, AWS_DEFAULT_REGION) or the
// shared config. transport is the caller's (Options.Transport), which the
// credential chain's own requests go through; nil for the default.
func newBedrock(c common, getenv func(string) string, transport http.RoundTripper, cache *CredentialCache) (*bedrockModel, error) {
	region := c.ep.region
	var creds aws.CredentialsProvider
	if c.ep.token == "" {
		var err error
		if creds, region, err = awsCredentials(c.ep.provider, region, getenv, transport, cache); err != nil {
			return nil, err
		}
	}
	if region == "" && c.ep.token != "" && c.ep.baseURL == "" {
		// A bearer token signs nothing, but the region still picks the
		// endpoint: the profile's, as when SigV4 signs.
		_, region, _ = cache.lookup(credentialKey{what: "region"}, func() (aws.CredentialsProvider, string, error) {
			cfg, err := config.LoadDefaultConfig(context.Background(), config.WithLogger(logging.Nop{}))
			return nil, cfg.Region, err
		})
	}
	if region == "" && c.ep.token != "" && c.ep.baseURL != "" {
		// A bearer token signs nothing and the endpoint is given: the
		// region is only the SDK's required field (a replay, a proxy).
		region = bedrockGatewayRegion
	}
	if region == "" {
		return nil, fmt.Errorf("%s: no AWS region: set AWS_REGION or AWS_DEFAULT_REGION, or region in the AWS profile", c.ep.provider)
	}
	if creds != nil {
		// The SDK signs a request once, before the doer's first attempt;
		// each attempt is signed again, so a retry carries neither a stale
		// X-Amz-Date (refused five minutes on) nor expired credentials.
		c.doer.sign = sigv4Signer(creds, region, "bedrock")
	}
	token := c.ep.token
	client := bedrockruntime.New(bedrockruntime.Options{
		Region:      region,
		HTTPClient:  c.doer,
		Retryer:     aws.NopRetryer{}, // the doer retries
		Credentials: creds,
		Logger:      logging.Nop{},
	}, func(o *bedrockruntime.Options) {
		// The SDK resolves the region's own endpoint (other partitions,
		// FIPS, dual-stack); an endpoint given by the spec or the
		// environment replaces it.
		if c.ep.baseURL != "" && c.ep.baseURL != bedrockDefaultEndpoint(c.ep.region) {
			o.BaseEndpoint = aws.String(strings.TrimRight(c.ep.baseURL, "/"))
		}
		if token != "" {
			o.BearerAuthTokenProvider = bearer.StaticTokenProvider{Token: bearer.Token{Value: token}}
			o.BearerAuthSigner = bearerSigner{}
			o.AuthSchemePreference = []string{"httpBearerAuth"}
		} else {
			// The SDK reads AWS_BEARER_TOKEN_BEDROCK from the process on
			// its own; the endpoint decided against it.
			o.BearerAuthTokenProvider = nil
			o.AuthSchemePreference = []string{"sigv4"}
		}
	})
	return &bedrockModel{common: c, client: client}, nil
}

// bearerSigner sets the bearer token. Unlike the SDK's signer it does not
// refuse plain HTTP, so a local gateway or stand-in can be used, as with the
// other providers' keys.
type bearerSigner struct{}

func (bearerSigner) SignWithBearerToken(_ context.Context, token bearer.Token, message bearer.Message) (bearer.Message, error) {
	req, ok := message.(*smithyhttp.Request)
	if !ok {
		return nil, fmt.Errorf("expected a smithy HTTP request, got %T", message)
	}
	clone := req.Clone()
	clone.Header.Set("Authorization", "Bearer "+token.Value)
	return clone, nil
}

// awsCredentials finds the credentials SigV4 signs with:
// AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (with AWS_SESSION_TOKEN) as
// the caller's environment holds them, else the SDK's default chain (shared
// profiles, SSO, web identity, container and instance roles), asked now so
// that a machine without credentials is told before any request. It returns
// region, or the shared config's when region is empty. What the chain
// found is kept in cache (nil keeps nothing). transport is the caller's
// (Options.Transport), nil for the default.
func awsCredentials(provider, region string, getenv func(string) string, transport http.RoundTripper, cache *CredentialCache) (aws.CredentialsProvider, string, error) {
	id, secret := strings.TrimSpace(getenv("AWS_ACCESS_KEY_ID")), strings.TrimSpace(getenv("AWS_SECRET_ACCESS_KEY"))
	if id != "" && secret != "" {
		return aws.NewCredentialsCache(credentials.NewStaticCredentialsProvider(id, secret, strings.TrimSpace(getenv("AWS_SESSION_TOKEN")))), region, nil
	}
	key := credentialKey{what: "chain", provider: provider, region: region, transport: transport}
	return cache.lookup(key, func() (aws.CredentialsProvider, string, error) {
		return awsChain(provider, region, transport)
	})
}

// awsChain asks the SDK's default credential chain, as awsCredentials.
func awsChain(provider, region string, transport http.RoundTripper) (aws.CredentialsProvider, string, error) {
	opts := []func(*config.LoadOptions) error{
		config.WithLogger(logging.Nop{}), // its warnings would interleave with the run's output
	}
	if strings.TrimSpace(os.Getenv("AWS_CA_BUNDLE")) == "" {
		// Credential providers that call out (SSO, STS, the instance
		// metadata service) use the runtime's transport, without the doer's
		// retries and error shapes, which are the model API's. With a CA
		// bundle (read, as the whole chain is, from the process) the SDK
		// builds its own client to trust it.
		client := &http.Client{Transport: credentialTransport(transport)}
		if transport == nil {
			client.Transport = newTransport()
		}
		opts = append(opts, config.WithHTTPClient(client))
	}
	if region != "" {
		opts = append(opts, config.WithRegion(region))
	}
	cfg, err := config.LoadDefaultConfig(context.Background(), opts...)
	if err != nil {
		return nil, "", fmt.Errorf("%s: loading the AWS configuration: %w", provider, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := cfg.Credentials.Retrieve(ctx); err != nil {
		return nil, "", missingCredentials{fmt.Errorf("%s: no AWS credentials found: set %s (the credential chain said: %w)", provider, bedrockAuth, err)}
	}
	return cfg.Credentials, firstNonEmpty(region, cfg.Region), nil
}

// sigv4Signer signs each attempt of a request for service, the body hashed.
func sigv4Signer(creds aws.CredentialsProvider, region, service string) func(*http.Request, []byte) error {
	signer := v4.NewSigner()
	return func(r *http.Request, body []byte) error {
		c, err := creds.Retrieve(r.Context())
		if err != nil {
			return fmt.Errorf("retrieving AWS credentials: %w", err)
		}
		sum := sha256.Sum256(body)
		r.Header.Del("Authorization") // the client's placeholder key
		return signer.SignHTTP(r.Context(), c, r, hex.EncodeToString(sum[:]), service, region, time.Now())
	}
}

// bedrockDefaultEndpoint is the endpoint recorded for a region when none
// is given.
func bedrockDefaultEndpoint(region string) string {
	return "https://bedrock-runtime." + region + ".amazonaws.com"
}

func (m *bedrockModel) request(messages []llms.MessageContent, opts llms.CallOptions) (bedrockInput, error) {
	return m.input(messages, opts)
}

func (m *bedrockModel) send(ctx context.Context, in bedrockInput) (*llms.ContentResponse, error) {
	out, err := m.client.Converse(ctx, in.converse())
	if err != nil {
		return nil, err
	}
	a := bedrockRead(out)
	if e := a.failedCall(m.ep); e != nil {
		e.StatusCode = http.StatusOK
		return nil, e
	}
	return a.response(), nil
}

// bedrockRead reads a Converse answer.
func bedrockRead(out *bedrockruntime.ConverseOutput) *bedrockTurn {
	var a bedrockTurn
	if msg, ok := out.Output.(*bedrockMessageOutput); ok {
		for _, b := range msg.Value.Content {
			a.add(b)
		}
	}
	a.stop = string(out.StopReason)
	a.usage(out.Usage)
	return &a
}
