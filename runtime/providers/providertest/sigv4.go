package providertest

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
)

// AWSCredentials are what a Bedrock stand-in checks a SigV4 signature
// against.
type AWSCredentials struct {
	AccessKeyID, SecretAccessKey, SessionToken string
	Region                                     string
}

// VerifySigV4 recomputes the AWS Signature Version 4 of r, whose body is
// body, for service, as the SigV4 specification defines it (canonical
// request, string to sign, derived signing key), and returns why it does not
// match c, or "". The Converse stand-in uses it; a test of another AWS
// endpoint can too.
func VerifySigV4(r *http.Request, body []byte, c AWSCredentials, service string) string {
	auth := r.Header.Get("Authorization")
	const algorithm = "AWS4-HMAC-SHA256"
	if !strings.HasPrefix(auth, algorithm+" ") {
		return "missing SigV4 Authorization header: " + auth
	}
	fields := map[string]string{}
	for _, f := range strings.Split(strings.TrimPrefix(auth, algorithm+" "), ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(f), "=")
		fields[k] = v
	}
	scope := strings.Split(fields["Credential"], "/")
	if len(scope) != 5 || scope[4] != "aws4_request" {
		return "malformed Credential: " + fields["Credential"]
	}
	if scope[0] != c.AccessKeyID {
		return "The security token included in the request is invalid: unknown access key " + scope[0]
	}
	if scope[2] != c.Region || scope[3] != service {
		return fmt.Sprintf("Credential should be scoped to region %s and service %s, not %s/%s", c.Region, service, scope[2], scope[3])
	}
	amzDate := r.Header.Get("X-Amz-Date")
	if len(amzDate) != 16 || amzDate[:8] != scope[1] {
		return "X-Amz-Date " + amzDate + " does not match the credential scope date " + scope[1]
	}
	signed := strings.Split(fields["SignedHeaders"], ";")
	for _, must := range []string{"host", "x-amz-date"} {
		if !slices.Contains(signed, must) {
			return "SignedHeaders must include " + must
		}
	}
	if c.SessionToken != "" {
		if r.Header.Get("X-Amz-Security-Token") != c.SessionToken || !slices.Contains(signed, "x-amz-security-token") {
			return "The security token included in the request is invalid"
		}
	}
	sum := sha256.Sum256(body)
	payload := hex.EncodeToString(sum[:])
	if h := r.Header.Get("X-Amz-Content-Sha256"); h != "" && h != payload {
		return "X-Amz-Content-Sha256 does not match the body"
	}

	var canonical strings.Builder
	canonical.WriteString(r.Method + "\n")
	canonical.WriteString(canonicalURI(r.URL.EscapedPath()) + "\n")
	canonical.WriteString(canonicalQuery(r) + "\n")
	for _, name := range signed {
		canonical.WriteString(name + ":" + headerValue(r, name) + "\n")
	}
	canonical.WriteString("\n" + fields["SignedHeaders"] + "\n" + payload)

	hashed := sha256.Sum256([]byte(canonical.String()))
	toSign := algorithm + "\n" + amzDate + "\n" + strings.Join(scope[1:], "/") + "\n" + hex.EncodeToString(hashed[:])
	key := hmacSHA256([]byte("AWS4"+c.SecretAccessKey), scope[1])
	for _, part := range scope[2:] {
		key = hmacSHA256(key, part)
	}
	want := hex.EncodeToString(hmacSHA256(key, toSign))
	if !hmac.Equal([]byte(want), []byte(fields["Signature"])) {
		return "The request signature we calculated does not match the signature you provided. " +
			"The canonical request was:\n" + canonical.String()
	}
	return ""
}

func hmacSHA256(key []byte, data string) []byte {
	h := hmac.New(sha256.New, key)
	h.Write([]byte(data))
	return h.Sum(nil)
}

// headerValue is a signed header's canonical value: trimmed, inner runs of
// spaces collapsed, several values joined by commas.
func headerValue(r *http.Request, name string) string {
	var values []string
	switch name {
	case "host":
		values = []string{r.Host}
	case "content-length":
		values = []string{strconv.FormatInt(r.ContentLength, 10)}
	default:
		values = r.Header.Values(name)
	}
	for i, v := range values {
		values[i] = strings.Join(strings.Fields(v), " ")
	}
	return strings.Join(values, ",")
}

// canonicalURI encodes each segment of the path as sent (itself encoded
// once): services other than S3 sign the path encoded twice.
func canonicalURI(escaped string) string {
	if escaped == "" {
		return "/"
	}
	segments := strings.Split(escaped, "/")
	for i, s := range segments {
		segments[i] = uriEncode(s)
	}
	return strings.Join(segments, "/")
}

func canonicalQuery(r *http.Request) string {
	q := r.URL.Query()
	var pairs []string
	for k, vs := range q {
		for _, v := range vs {
			pairs = append(pairs, uriEncode(k)+"="+uriEncode(v))
		}
	}
	slices.Sort(pairs)
	return strings.Join(pairs, "&")
}

// uriEncode is SigV4's URI encoding: every byte but the unreserved
// characters as %XX, upper case.
func uriEncode(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.' || c == '~' {
			b.WriteByte(c)
			continue
		}
		fmt.Fprintf(&b, "%%%02X", c)
	}
	return b.String()
}
