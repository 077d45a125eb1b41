// Drives Debian's headless Chromium (playwright-core, no browser download) through runs of the
// collecting page. usage: node browser/run.mjs JOB.json
// JOB: {url, runs: [{profile: dir, token, value}]} → prints [{results, remaining} per run]
import { readFileSync } from "node:fs";
import { chromium } from "playwright-core";

const job = JSON.parse(readFileSync(process.argv[2], "utf8"));
const args = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
  "--disable-component-update", "--disable-sync"];
const out = [];
for (const run of job.runs) {
  // one browser process per run, on the run's own profile: a device's IndexedDB outlives the process
  const context = await chromium.launchPersistentContext(run.profile, {
    executablePath: job.chromium ?? "/usr/bin/chromium", headless: true, args, ignoreHTTPSErrors: true,
  });
  try {
    const page = await context.newPage();
    const errors = [];
    page.on("pageerror", (e) => errors.push(String(e)));
    await page.goto(`${job.url}/app/index.html?token=${encodeURIComponent(run.token)}&value=${run.value}`);
    await page.waitForFunction(() => document.title === "done" || window.ldpError, null, { timeout: 60000 }).catch(() => {});
    const res = await page.evaluate(() => window.ldpResult ?? null);
    out.push(res ?? { error: errors.join("; ") || "the page did not finish" });
  } finally {
    await context.close();
  }
}
process.stdout.write(JSON.stringify(out));
