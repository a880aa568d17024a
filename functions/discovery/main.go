// Command discovery is lake's Arrow Flight SQL discovery server: it loads the
// snapshot blob (from S3 or a file), polls it for new versions, and answers
// tenant-filtered metadata requests from memory. It never talks to DynamoDB.
// The program is program.Main (functions/discovery/program), which serves
// the catalog browser on -browser-listen; the server is internal/discovery.
//
// Every flag has an environment variable; a flag on the command line wins
// (README, Configuration; run with -h for the list):
//
//	-listen                 LAKE_LISTEN                 Flight SQL address (default :50051)
//	-http-listen            LAKE_HTTP_LISTEN            /healthz alone, for the load balancer (default :8080; - disables)
//	-admin-listen           LAKE_ADMIN_LISTEN           /healthz, /status, /metrics (default 127.0.0.1:8081; - disables)
//	-admin-pprof            LAKE_ADMIN_PPROF=true       also Go's profiles under /debug/pprof/ on -admin-listen (default off)
//	-snapshot               LAKE_SNAPSHOT               s3://bucket/key, file:///path or a path (required)
//	-poll-interval          LAKE_POLL_INTERVAL          blob poll interval, a conditional GET (default 2s, at least 100ms)
//	-max-staleness          LAKE_MAX_STALENESS          unhealthy past this since the last successful poll (default 5m; 0 disables)
//	-segment-retry-max      LAKE_SEGMENT_RETRY_MAX      longest wait before a segment that failed to load is fetched again (default 1m)
//	-shutdown-grace         LAKE_SHUTDOWN_GRACE         drain time after SIGTERM (default 20s)
//	-tls-cert, -tls-key     LAKE_TLS_CERT, LAKE_TLS_KEY PEM pair; serves TLS when set
//	-jwt-hs256-secret-file  LAKE_JWT_HS256_SECRET_FILE  HS256 secret file (or LAKE_JWT_HS256_SECRET)
//	-jwks-file              LAKE_JWKS_FILE              JWKS of RS256/ES256 public keys
//	-jwks-url               LAKE_JWKS_URL               https URL of a JWKS, fetched at start (not with -jwks-file)
//	-jwks-refresh           LAKE_JWKS_REFRESH           -jwks-url refresh interval (default 15m, at least 1m)
//	-jwt-issuer             LAKE_JWT_ISSUER             required iss
//	-jwt-audience           LAKE_JWT_AUDIENCE           required aud (required with a JWKS)
//	-jwt-max-lifetime       LAKE_JWT_MAX_LIFETIME       longest token lifetime exp - iat (default 24h)
//	-tenant-claim           LAKE_TENANT_CLAIM           claim holding the tenant (default tenant)
//	-batch-bytes            LAKE_BATCH_BYTES            bytes per record batch at most (default 1 MiB)
//	-request-timeout        LAKE_REQUEST_TIMEOUT        server-side deadline of every Flight SQL call, 1s to 1h (default 30s)
//	-cache-bytes            LAKE_CACHE_BYTES            everything kept derived from segments: prepared tenants, SQL engines and results, answers (default 0: 40% of the memory limit)
//	-s3-path-style          LAKE_S3_PATH_STYLE          path-style S3 addressing (default false)
//	-browser-listen         LAKE_BROWSER_LISTEN         catalog browser page and API, plaintext HTTP; not with TLS (default off)
//	-iceberg-listen         LAKE_ICEBERG_LISTEN         Iceberg REST catalog (read side), TLS with -tls-cert (default off)
//	-vending-role-arn       LAKE_VENDING_ROLE_ARN       data-reader role lake.credentials assumes (default: vending off)
//	-vending-duration       LAKE_VENDING_DURATION       vended credentials' lifetime, 15m to 12h (default 15m)
//	-vending-own-buckets    LAKE_VENDING_OWN_BUCKETS    lake's own buckets, never vended for (comma-separated)
//	-vending-event-bus      LAKE_VENDING_EVENT_BUS      EventBridge bus for a 'Credentials Vended' event per vend (default: log only)
//
// Logs are JSON lines on stdout.
package main

import (
	"context"
	"os"

	"github.com/lake-catalog/lake/functions/discovery/program"
)

func main() {
	os.Exit(program.Main(context.Background(), os.Args[1:], os.Getenv, os.Stdout, os.Stderr))
}
