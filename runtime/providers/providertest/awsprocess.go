package providertest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// AWSCredentialProcess makes c the only credentials the AWS SDK's default
// chain finds, through a credential_process in a config file of its own,
// and returns how many times the process has run: the times the chain was
// asked. It sets the process's environment (AWS_CONFIG_FILE, AWS_REGION,
// and empties the variables that would come first in the chain), so the
// test calling it cannot be parallel.
func AWSCredentialProcess(t testing.TB, c AWSCredentials) (asked func() int) {
	t.Helper()
	dir := t.TempDir()
	count := filepath.Join(dir, "asked")
	process := `sh -c 'echo x >> "` + count + `"; echo "{\"Version\":1,\"AccessKeyId\":\"` + c.AccessKeyID +
		`\",\"SecretAccessKey\":\"` + c.SecretAccessKey + `\"}"'`
	if err := os.WriteFile(filepath.Join(dir, "config"), []byte("[default]\ncredential_process = "+process+"\n"), 0o600); err != nil {
		t.Fatalf("providertest: %v", err)
	}
	for _, k := range []string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_BEARER_TOKEN_BEDROCK", "AWS_PROFILE",
		"AWS_DEFAULT_REGION", "AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "AWS_CONTAINER_CREDENTIALS_FULL_URI"} {
		t.Setenv(k, "")
	}
	t.Setenv("AWS_REGION", c.Region)
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(dir, "config"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(dir, "credentials"))
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	return func() int {
		b, err := os.ReadFile(count)
		if err != nil && !os.IsNotExist(err) {
			t.Fatalf("providertest: %v", err)
		}
		return strings.Count(string(b), "x")
	}
}
