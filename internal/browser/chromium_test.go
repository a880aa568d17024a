package browser_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/lake-catalog/lake/internal/testenv"
)

// chromiumPath is Debian's chromium, which scripts/install-deps.sh installs.
const chromiumPath = "/usr/bin/chromium"

// TestInChromium drives the page in headless Chromium
// (testdata/browser.test.mjs with playwright-core and axe-core from
// tools/npm): pick acme, open a nested table, search by column, open a match
// by keyboard, its history, its Preview tab's rows (read from a Parquet file
// under local mode's data root) and limit, a table lake may not read whose
// Preview tab says why, switch to globex and find none of acme's names, no
// serious accessibility violations. Its screenshots go to $LAKE_ARTIFACTS_DIR/browser
// (default: lake-artifacts/browser under the temporary folder).
func TestInChromium(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		testenv.Unavailable(t, "node is not installed")
	}
	if _, err := os.Stat(chromiumPath); err != nil {
		testenv.Unavailable(t, "%s is not installed (Debian's chromium)", chromiumPath)
	}
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	modules := filepath.Join(root, "tools", "npm", "node_modules")
	for _, f := range []string{"playwright-core/package.json", "axe-core/axe.min.js"} {
		if _, err := os.Stat(filepath.Join(modules, f)); err != nil {
			testenv.Unavailable(t, "npm module %s is not installed in tools/npm", f)
		}
	}
	dir := os.Getenv("LAKE_ARTIFACTS_DIR")
	if dir == "" {
		dir = filepath.Join(os.TempDir(), "lake-artifacts")
	}
	dir = filepath.Join(dir, "browser")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	script, err := filepath.Abs(filepath.Join("testdata", "browser.test.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, script, env.base+"/", dir)
	cmd.Env = append(os.Environ(), "NODE_PATH="+modules)
	out, err := cmd.CombinedOutput()
	if err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			t.Fatalf("%s timed out after 2 minutes:\n%s", filepath.Base(script), out)
		}
		t.Fatalf("%s: %v:\n%s", filepath.Base(script), err, out)
	}
	t.Logf("%s", out)
	t.Logf("screenshots: %s (table.png: acme's nested.rich schema tree; search.png: the column search for customer_id; history.png: sales.orders' versions; preview.png: its Preview tab)", dir)
}
