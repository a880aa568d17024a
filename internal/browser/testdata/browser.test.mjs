// The catalog browser in a real browser: Debian's headless Chromium driven
// by playwright-core (which never downloads a browser), with axe-core's
// accessibility checks. TestInChromium (browser_test.go) runs it against the
// package's local instance:
//
//   NODE_PATH=tools/npm/node_modules node browser.test.mjs BROWSER_URL SCREENSHOT_DIR
//
// It prints each step and exits non-zero at the first failed check.
import { createRequire } from "node:module";
import path from "node:path";

// ES imports ignore NODE_PATH; require honours it.
const require = createRequire(import.meta.url);
const { chromium } = require("playwright-core");
const axePath = require.resolve("axe-core/axe.min.js");

const [url, shots] = process.argv.slice(2);
if (!url || !shots) {
  console.error("usage: node browser.test.mjs BROWSER_URL SCREENSHOT_DIR");
  process.exit(2);
}

function check(ok, msg) {
  if (!ok) throw new Error("check failed: " + msg);
}
const step = (msg) => console.log("step: " + msg);

// axe runs axe-core on the page as it is and fails on any serious or
// critical violation, printing each.
async function axe(page, where) {
  if (!(await page.evaluate(() => typeof window.axe !== "undefined"))) await page.addScriptTag({ path: axePath });
  const res = await page.evaluate(() => window.axe.run(document, { resultTypes: ["violations"] }));
  const bad = res.violations.filter((v) => v.impact === "serious" || v.impact === "critical");
  for (const v of res.violations) {
    console.log(`axe (${where}): ${v.impact} ${v.id}: ${v.help}`);
    for (const n of v.nodes) console.log(`    ${n.target.join(" ")}: ${n.failureSummary.replace(/\n/g, " ")}`);
  }
  console.log(`axe (${where}): ${res.violations.length} violations, ${res.passes.length} rules passed`);
  check(bad.length === 0, `${where}: ${bad.length} serious or critical accessibility violations (listed above)`);
}

// openTenant picks tenant in the dev-tenant picker and opens it, waiting
// for its namespace wantNS to be listed.
async function openTenant(page, tenant, wantNS) {
  await page.selectOption("#tenant", tenant);
  await page.getByRole("button", { name: "Open" }).click();
  await page.locator(`#namespaces button[data-ns="${wantNS}"]`).waitFor();
  await page.locator("#detail", { hasText: "Pick a table" }).waitFor();
}

const browser = await chromium.launch({ executablePath: "/usr/bin/chromium", args: ["--no-sandbox"], headless: true });
let failed = false;
try {
  // bypassCSP lets axe-core in as an inline script; the page's own
  // Content-Security-Policy (default-src 'self') forbids it.
  const page = await browser.newPage({ viewport: { width: 1200, height: 800 }, bypassCSP: true });
  page.setDefaultTimeout(10000);
  page.on("pageerror", (e) => { failed = true; console.error("page error: " + e.message); });

  step("load the page");
  await page.goto(url);
  await page.locator("#dev-tenants:not([hidden])").waitFor();
  await axe(page, "tenant picker");

  step("open tenant acme");
  await openTenant(page, "acme", "nested");
  check(/generation \d+ · 253 tables/.test(await page.locator("#snapshot").innerText()), "acme's snapshot line names 253 tables");

  step("the table list shows column counts and descriptions");
  await page.locator('#namespaces button[data-ns="legacy"]').click();
  await page.locator("#tables-heading", { hasText: "Tables in legacy" }).waitFor();
  check((await page.locator("#tables li").innerText()).includes("no schema stored"), "a legacy table is listed without a column count");

  step("open the nested table nested.rich");
  await page.locator('#namespaces button[data-ns="nested"]').click();
  await page.locator("#tables-heading", { hasText: "Tables in nested" }).waitFor();
  const listed = await page.locator("#tables li").innerText();
  check(/\b\d+ columns · TABLE\b/.test(listed) && listed.includes("Every Arrow type, nested."), `the table list shows rich's column count and description, got ${JSON.stringify(listed)}`);
  await page.getByRole("button", { name: "rich", exact: true }).click();
  const detail = page.locator("#detail");
  await detail.getByRole("heading", { name: "nested.rich" }).waitFor();
  // A struct's child (struct.a, not null) and a list's item, inside their
  // parents' expanded trees.
  const structChild = detail.locator("details:has(> summary > strong:text-is('struct')) > ul > li strong:text-is('a')");
  const listItem = detail.locator("details:has(> summary > strong:text-is('list')) > ul > li strong:text-is('item')");
  check(await structChild.isVisible(), "struct's child a is shown");
  check(await listItem.isVisible(), "list's item is shown");
  // Every type is shown exactly, parameters and children included.
  for (const type of ["decimal128(38, 10)", "decimal256(76, -5)", "timestamp[us, tz=UTC]", "fixed_size_binary[16]", "duration[ms]",
    "dictionary<values=large_utf8, indices=int8, ordered>", "list<item: utf8 not null>", "map<utf8, int64>",
    "struct<a: int64 not null, b: utf8, nested: struct<deep: list<item: date32>>>"]) {
    check(await detail.locator(".type", { hasText: type }).first().isVisible(), `the exact type ${type} is shown`);
  }
  check(await detail.locator(".type:text-is('decimal')").count() === 0, "no type is shown as a bare decimal");
  check((await detail.innerText()).includes("the customer's id"), "the column comment is shown");
  check((await detail.locator(".description").innerText()) === "Every Arrow type, nested.\nOne row per test.", "the description is shown with its line break");
  const facts = await detail.locator("dl.facts").innerText();
  check(facts.includes("s3://b/rich/") && /Version\s+1/.test(facts) && facts.includes("Created") && facts.includes("Updated"), "location, version and times are shown");
  check(/tier\s*gold/.test(await detail.innerText()), "the properties are shown");
  await axe(page, "table view");
  // The page from the top down to the end of the struct's subtree: the
  // picker, the namespaces and the schema's nested lists and struct.
  const structBox = await detail.locator("details:has(> summary > strong:text-is('struct'))").boundingBox();
  await page.screenshot({ path: path.join(shots, "table.png"), fullPage: true, clip: { x: 0, y: 0, width: 1200, height: Math.ceil(structBox.y + structBox.height + 4) } });

  step("search by column customer_id");
  await page.fill("#search", "customer_id");
  await page.selectOption("#search-by", "column");
  await page.getByRole("button", { name: "Search", exact: true }).click();
  await detail.getByRole("heading", { name: /^Search:/ }).waitFor();
  const hits = await detail.locator("li button").allInnerTexts();
  check(hits.length === 1 && hits[0] === "sales.orders", `search finds only sales.orders, got ${JSON.stringify(hits)}`);
  await axe(page, "search results");
  await page.screenshot({ path: path.join(shots, "search.png") });

  step("keyboard: Tab to the first match, Enter opens it");
  // The results' heading has focus after a search; Tab moves to the match.
  await page.keyboard.press("Tab");
  const focused = await page.evaluate(() => document.activeElement && document.activeElement.textContent);
  check(focused === "sales.orders", `Tab focuses the match, got ${JSON.stringify(focused)}`);
  await page.keyboard.press("Enter");
  await detail.getByRole("heading", { name: "sales.orders" }).waitFor();
  check((await detail.innerText()).includes("customer_id"), "the opened table shows its column customer_id");

  step("the table's history: three versions, who made each, what each changed");
  await detail.getByRole("heading", { name: "History" }).waitFor();
  const versions = await detail.locator(".history ol.versions > li").allInnerTexts();
  check(versions.length === 3 && versions[0].startsWith("v3 update by arn:aws:iam::123456789012:user/alice") && versions[0].includes("amount: added")
    && versions[1].includes("placed_at: added") && versions[2].startsWith("v1 create"), `history lists v3, v2, v1 with their changes, got ${JSON.stringify(versions)}`);
  await axe(page, "table history");
  const historyBox = await detail.locator(".history").boundingBox();
  await page.screenshot({ path: path.join(shots, "history.png"), fullPage: true, clip: { x: 0, y: 0, width: 1200, height: Math.ceil(historyBox.y + historyBox.height + 8) } });

  step("the Preview tab of sales.orders: typed headers, the rows, the stats, the limit");
  // The table was opened above from the search; list its namespace beside it.
  await page.locator('#namespaces button[data-ns="sales"]').click();
  await page.locator("#tables-heading", { hasText: "Tables in sales" }).waitFor();
  // Its Schema tab is shown first.
  check(await detail.getByRole("tab", { name: "Schema" }).getAttribute("aria-selected") === "true", "the Schema tab is selected first");
  await detail.getByRole("tab", { name: "Preview" }).click();
  const rows = detail.locator("table.rows tbody tr");
  await rows.first().waitFor();
  check(await detail.locator("#panel-schema").isHidden(), "the schema is hidden while the Preview tab is shown");
  const headers = await detail.locator("table.rows thead th").allInnerTexts();
  check(headers.length === 3 && headers[0].includes("customer_id") && headers[0].includes("int64 not null") && headers[1].includes("timestamp[us, tz=UTC]")
    && headers[2].includes("decimal128(18, 2)"), `the headers name each column and its exact type, got ${JSON.stringify(headers)}`);
  check(await rows.count() === 24, `all 24 rows are shown, got ${await rows.count()}`);
  const first = await rows.first().locator("td").allInnerTexts();
  check(JSON.stringify(first) === JSON.stringify(["4100", "2026-11-02T08:15:00Z", "12.50"]), `the first row, got ${JSON.stringify(first)}`);
  check(await detail.locator("table.rows td.null").count() > 0, "a null amount is shown as null");
  const stats = await detail.locator(".preview .stats").innerText();
  check(/^24 rows \(limit 100\) · 1 file, 3 row groups read, 0 skipped, [\d,]+ bytes read$/.test(stats), `the stats line, got ${JSON.stringify(stats)}`);
  await axe(page, "preview tab");
  const previewBox = await detail.locator(".rows-scroll").boundingBox();
  await page.screenshot({ path: path.join(shots, "preview.png"), fullPage: true, clip: { x: 0, y: 0, width: 1200, height: Math.ceil(previewBox.y + previewBox.height + 12) } });

  step("the Preview tab's limit: 10 rows, more follow");
  await page.selectOption("#preview-limit", "10");
  await detail.locator(".preview .stats", { hasText: "limit 10; more follow" }).waitFor();
  check(await rows.count() === 10, `10 rows after picking 10, got ${await rows.count()}`);

  step("keyboard: the arrow keys move between the tabs");
  await detail.getByRole("tab", { name: "Preview" }).focus();
  await page.keyboard.press("ArrowLeft");
  check(await detail.getByRole("tab", { name: "Schema" }).getAttribute("aria-selected") === "true", "ArrowLeft selects the Schema tab");
  check(await detail.locator("#panel-schema").isVisible(), "the schema is shown again");

  step("a table lake may not read: the Preview tab says why");
  await page.locator('#namespaces button[data-ns="nested"]').click();
  await page.locator("#tables-heading", { hasText: "Tables in nested" }).waitFor();
  await page.getByRole("button", { name: "rich", exact: true }).click();
  await detail.getByRole("heading", { name: "nested.rich" }).waitFor();
  await detail.getByRole("tab", { name: "Preview" }).click();
  const refusal = detail.locator(".preview-error");
  await refusal.waitFor();
  const refusalText = await refusal.innerText();
  check(refusalText.startsWith("No preview: acme/nested/rich: ") && refusalText.includes("lake tenant allow-prefix"), `the refusal is readable, got ${JSON.stringify(refusalText)}`);
  await axe(page, "preview refused");

  step("switch to tenant globex");
  await openTenant(page, "globex", "secret");
  await page.locator("#tables").getByRole("button", { name: "secret.globex_only" }).waitFor();
  // A column search that matches tables in both tenants.
  await page.fill("#search", "id");
  await page.getByRole("button", { name: "Search", exact: true }).click();
  await detail.getByRole("heading", { name: /^Search:/ }).waitFor();
  const globexHits = await detail.locator("li button").allInnerTexts();
  check(globexHits.includes("sales.globex_orders"), `globex's search finds sales.globex_orders, got ${JSON.stringify(globexHits)}`);
  // All the page's text, hidden parts included, but the dev-tenant picker
  // (which lists acme by name).
  const text = await page.evaluate(() => {
    const b = document.body.cloneNode(true);
    b.querySelector("#tenant").remove();
    return b.textContent;
  });
  for (const acme of ["acme", "rich", "t0000", "t0249", "events", "nested", "legacy", "many", "sales.orders"]) {
    check(!new RegExp("\\b" + acme.replace(".", "\\.") + "\\b").test(text), `globex's page names acme's ${acme}`);
  }
  await axe(page, "globex search results");
  check(!failed, "no errors in the page");
  console.log("ok: screenshots in " + shots);
} catch (e) {
  console.error(e.stack || String(e));
  process.exitCode = 1;
} finally {
  await browser.close();
}
if (failed) process.exitCode = 1;
