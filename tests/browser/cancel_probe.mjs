// Click the order view's Cancel buttons in a real browser, as an analyst would: a page
// served by Voilà (a live kernel runs the view against the test's simulator), Debian's
// headless Chromium driven by playwright-core (no browser download).
//
//   node cancel_probe.mjs '<json config>'
//
// config: {url, theme, widths: [1280, 390], height, shots, profile, timeoutMs}.
// At each width, at one spot (the second row): a first click arms the order there, a
// second click at the same spot confirms it; once that order has left the rows (its
// outcome held a few seconds, then the OPEN filter hides it) another order sits at the
// spot, and a click there must only arm that one.
// The test then closes the service's port (it asks on stdout, the test answers on
// stdin): the view is offline and every Cancel must be disabled, at each width. A
// screenshot of each state is written to `shots`. Requests of the page to anything but
// loopback are refused. One JSON object goes to stdout; the
// pytest side does the asserting (and checks on the simulator what was cancelled).
import { chromium } from "playwright-core";

const config = JSON.parse(process.argv[2]);
const started = Date.now();
const elapsed = () => Date.now() - started;
const SPOT = 1; // the second row

// The row at `index` among the visible order rows: its order and its button (if shown).
function rowAt(index) {
  const rows = [...document.querySelectorAll(".tk-orow[data-order]")].filter(
    (r) => r.getClientRects().length > 0,
  );
  const row = rows[index];
  if (!row) return null;
  const box = row.closest(".widget-hbox");
  const button = box ? box.querySelector("button") : null;
  const shown =
    button && button.getClientRects().length > 0 && getComputedStyle(button).visibility !== "hidden";
  const r = shown ? button.getBoundingClientRect() : null;
  const outcome = box ? box.querySelector(".tk-outcome") : null;
  return {
    order: row.dataset.order,
    outcome: outcome ? outcome.textContent.trim() : "",
    button: shown
      ? { x: r.x + r.width / 2, y: r.y + r.height / 2, text: button.textContent.trim(), disabled: button.disabled }
      : null,
  };
}

function viewState() {
  const status = document.querySelector(".tk-status");
  const buttons = [...document.querySelectorAll(".widget-button")].filter(
    (b) => b.getClientRects().length > 0 && getComputedStyle(b).visibility !== "hidden" && /Cancel/.test(b.textContent),
  );
  return {
    state: status ? status.dataset.state : null,
    cancels: buttons.length,
    enabled: buttons.filter((b) => !b.disabled).length,
    errors: [...document.querySelectorAll(".jp-OutputArea-output")]
      .map((e) => e.textContent)
      .filter((t) => /Traceback|Error:|Exception/.test(t))
      .map((t) => t.slice(0, 500)),
  };
}

const result = { theme: config.theme, runs: [], offline: [], pageErrors: [], blocked: [], error: null, elapsedMs: 0 };

// Poll `fn(arg)` in the page until `pred` (in node) holds for its value; returns it.
async function until(page, fn, arg, what, pred = (v) => v, timeout = config.timeoutMs) {
  const deadline = Date.now() + timeout;
  for (;;) {
    let value = null;
    try {
      value = await page.evaluate(fn, arg);
    } catch {
      value = null; // a re-render in flight: try again
    }
    if (value && pred(value)) return value;
    if (Date.now() > deadline) throw new Error(`${what}: not within ${timeout} ms (last: ${JSON.stringify(value)})`);
    await page.waitForTimeout(50);
  }
}

// The spot once the page has laid itself out again (a resize reflows the filter bar a
// little later): the same order and button position in two reads 250 ms apart.
async function settled(page) {
  let before = null;
  for (;;) {
    const now = await until(page, rowAt, SPOT, "a plain Cancel at the spot", (r) => r.button && r.button.text === "Cancel");
    if (before && before.order === now.order && before.button.x === now.button.x && before.button.y === now.button.y) return now;
    before = now;
    await page.waitForTimeout(250);
  }
}

// The next line the test writes to our stdin.
const lines = [];
let waiting = null;
let buffered = "";
process.stdin.setEncoding("utf8");
process.stdin.on("data", (chunk) => {
  buffered += chunk;
  let at;
  while ((at = buffered.indexOf("\n")) >= 0) {
    lines.push(buffered.slice(0, at));
    buffered = buffered.slice(at + 1);
  }
  if (waiting && lines.length) waiting(lines.shift());
});
function nextLine() {
  if (lines.length) return Promise.resolve(lines.shift());
  return new Promise((resolve) => { waiting = (line) => { waiting = null; resolve(line); }; });
}

const shot = async (page, name) => {
  const path = `${config.shots}/views_${config.theme}_${name}.png`;
  await page.screenshot({ path, fullPage: true });
  return path;
};

const context = await chromium.launchPersistentContext(config.profile, {
  executablePath: "/usr/bin/chromium",
  headless: true,
  args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"],
  viewport: { width: config.widths[0], height: config.height },
});
try {
  await context.route(/^(?!https?:\/\/127\.0\.0\.1[:/])[a-z]+:\/\//, (route) => {
    result.blocked.push(route.request().url().slice(0, 200));
    return route.abort();
  });
  const page = context.pages()[0] || (await context.newPage());
  page.on("pageerror", (e) => result.pageErrors.push(String(e).slice(0, 500)));
  await page.goto(config.url, { waitUntil: "commit", timeout: config.timeoutMs });
  // the view has read the account and shows OPEN orders with their Cancel buttons
  await until(
    page,
    () => {
      const s = document.querySelector(".tk-status");
      const rows = [...document.querySelectorAll(".tk-orow[data-order]")].filter((r) => r.getClientRects().length);
      return s && s.dataset.state === "connected" && rows.length >= 3 && document.querySelector(".widget-button");
    },
    null,
    "the order view connected with its OPEN orders",
  );
  for (const width of config.widths) {
    await page.setViewportSize({ width, height: config.height });
    const run = { width, shots: [] };
    result.runs.push(run);
    // the spot, with a plain Cancel (a previous run's armed button has disarmed by itself)
    await until(page, rowAt, SPOT, "a plain Cancel at the spot", (r) => r.button && r.button.text === "Cancel");
    const first = await settled(page);
    const spot = first.button;
    run.spot = [spot.x, spot.y];
    run.first = first.order;
    await page.mouse.click(spot.x, spot.y);
    const armed = await until(page, rowAt, SPOT, "the first click armed the order",
      (r) => r.order === first.order && r.button && r.button.text.startsWith("Confirm"));
    run.armedText = armed.button.text;
    run.shots.push(await shot(page, `${width}_armed`));
    await page.mouse.click(spot.x, spot.y); // the same spot: confirms
    const outcome = await until(page, rowAt, SPOT, "the cancel's outcome on its row",
      (r) => r.order === first.order && r.outcome);
    run.outcome = outcome.outcome;
    run.shots.push(await shot(page, `${width}_outcome`));
    // the outcome is held, then the order leaves the OPEN filter and the rows move up
    const moved = await until(page, rowAt, SPOT, "another order at the spot",
      (r) => r.order !== first.order && r.button && r.button.text === "Cancel");
    run.second = moved.order;
    run.secondAt = [moved.button.x, moved.button.y];
    await page.mouse.click(spot.x, spot.y); // a second click at the same spot, rows moved
    const rearmed = await until(page, rowAt, SPOT, "the click at the moved spot armed the order now there",
      (r) => r.order === moved.order && r.button && r.button.text.startsWith("Confirm"));
    run.secondText = rearmed.button.text;
    run.secondOutcome = rearmed.outcome;
    run.shots.push(await shot(page, `${width}_moved`));
    // it disarms by itself (nothing else is cancelled)
    await until(page, rowAt, SPOT, "the armed button disarmed by itself",
      (r) => r.order === moved.order && r.button && r.button.text === "Cancel");
  }
  // the test closes the service's port (every connection dropped, none accepted): the
  // view is offline; it answers on stdin once it has
  process.stdout.write(JSON.stringify({ ask: "offline" }) + "\n");
  await nextLine();
  await until(page, viewState, null, "the view offline", (v) => ["reconnecting", "error"].includes(v.state));
  for (const width of [...config.widths].reverse()) {
    await page.setViewportSize({ width, height: config.height });
    const state = await until(page, viewState, null, "every Cancel disabled", (v) => v.cancels > 0 && v.enabled === 0);
    const spot = await page.evaluate(rowAt, SPOT);
    if (spot && spot.button) await page.mouse.click(spot.button.x, spot.button.y); // a disabled button: nothing
    const path = await shot(page, `${width}_offline`);
    // what the picture shows: still offline, every Cancel still disabled
    result.offline.push({ width, ...state, spot, shot: path, after: await page.evaluate(viewState) });
  }
  result.final = await page.evaluate(viewState);
} catch (e) {
  result.error = String(e && e.stack ? e.stack : e).slice(0, 2000);
  try {
    const page = context.pages()[0];
    if (page) result.failShot = await shot(page, "failure");
  } catch {}
} finally {
  result.elapsedMs = elapsed();
  await context.close();
}
// (stdin stays open: exit once the result is written)
process.stdout.write(JSON.stringify(result) + "\n", () => process.exit(0));
