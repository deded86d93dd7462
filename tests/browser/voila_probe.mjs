// Drive Debian's headless Chromium (playwright-core: no browser download) against notebook
// 02 served by Voilà with progressive rendering, while its kernel executes it:
//
//   node voila_probe.mjs <url> <screenshot.png> <timeout-ms> <done-text> <profile-dir>
//
// Chromium runs with the given (fresh) profile directory, which lets the caller find any
// of its processes left behind. Requests to anything but loopback are refused, so the page
// renders the same with or without a network (Voilà's template links a CDN icon font).
// It polls the rendered DOM every 100 ms and records what the live views show. As soon as
// the ticker table has its four pairs, BTC/BRL's last price has taken `MIN_DISTINCT`
// distinct values, the order view shows a row with a status badge and both views say
// "connected", it takes a full-page screenshot (the notebook's last cell stops the views,
// which removes them from the page, so the picture is taken during the live window), then
// keeps polling until the page shows
// `done-text` (printed by the notebook's second-to-last cell) or the deadline passes.
// One JSON object goes to stdout; the pytest side does the asserting.
import { chromium } from "playwright-core";

const [url, screenshot, timeoutArg, doneText, profile] = process.argv.slice(2);
const timeoutMs = Number(timeoutArg);
const SYMBOLS = ["BTC/BRL", "ETH/BRL", "SOL/BRL", "USDT/BRL"];
const MIN_DISTINCT = 3;
const PRICE = /^[0-9][0-9,]*\.[0-9]+$/; // a rendered price, e.g. "339,601.85"
const started = Date.now();
const elapsed = () => Date.now() - started;

// What the page shows right now (runs in the page). Only rendered DOM is read.
function snapshot(done) {
  const rows = {};
  for (const row of document.querySelectorAll(".tk-row[data-symbol]")) {
    rows[row.dataset.symbol] = [...row.querySelectorAll("span")].map((s) => s.textContent.trim());
  }
  const orders = {};
  let orderRows = 0;
  for (const row of document.querySelectorAll(".tk-orow[data-order]")) {
    if (row.getClientRects().length === 0) continue; // a hidden (spare) row slot
    const badge = row.querySelector(".tk-badge[data-status]");
    orders[row.dataset.order] = badge ? badge.dataset.status : null;
    orderRows += 1;
  }
  // each row slot is a widget of its own, repainted by its own message: between two
  // messages an order can briefly show in two slots
  const torn = orderRows !== Object.keys(orders).length;
  const status = [...document.querySelectorAll(".tk-status")].map((s) => s.textContent.trim());
  const text = document.body ? document.body.innerText : "";
  const doneLine = text.split("\n").find((line) => line.includes(done)) || null;
  const errors = [...document.querySelectorAll(".jp-OutputArea-output")]
    .map((e) => e.textContent)
    .filter((t) => /Traceback|Error:|Exception/.test(t))
    .map((t) => t.slice(0, 500));
  return { rows, orders, torn, status, doneLine, errors };
}

const result = {
  btc: [], // [ms since start, BTC/BRL "last" cell text] each time it changed
  symbolsSeen: [],
  shot: null, // the page as it was right after the screenshot was taken
  shotAtMs: null,
  doneLine: null,
  errors: [],
  consoleErrors: [],
  pageErrors: [],
  blockedRequests: [],
  samples: 0,
  tornSamples: 0, // samples caught between two row-slot repaints of the order view
  elapsedMs: 0,
  error: null,
};

const context = await chromium.launchPersistentContext(profile, {
  executablePath: "/usr/bin/chromium",
  headless: true,
  args: [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
  ],
  viewport: { width: 1300, height: 1500 },
});
try {
  await context.route(/^(?!https?:\/\/127\.0\.0\.1[:/])[a-z]+:\/\//, (route) => {
    result.blockedRequests.push(route.request().url().slice(0, 200));
    return route.abort();
  });
  const page = context.pages()[0] || (await context.newPage());
  page.on("console", (m) => {
    if (m.type() === "error") result.consoleErrors.push(m.text().slice(0, 300));
  });
  page.on("pageerror", (e) => result.pageErrors.push(String(e).slice(0, 500)));
  await page.goto(url, { waitUntil: "commit", timeout: timeoutMs });
  const symbols = new Set();
  const distinct = new Set();
  while (elapsed() < timeoutMs) {
    let snap = null;
    try {
      snap = await page.evaluate(snapshot, doneText);
    } catch {
      snap = null; // a navigation/re-render in flight: try again on the next poll
    }
    if (snap) {
      result.samples += 1;
      Object.keys(snap.rows).forEach((s) => symbols.add(s));
      const btc = snap.rows["BTC/BRL"];
      // (a row shows "–" until its first tick has been painted)
      if (btc && PRICE.test(btc[3] || "")) {
        const last = btc[3];
        const prev = result.btc.length ? result.btc[result.btc.length - 1][1] : null;
        if (last !== prev) result.btc.push([elapsed(), last]);
        distinct.add(last);
      }
      if (snap.errors.length) result.errors = snap.errors;
      if (snap.torn) result.tornSamples += 1;
      // (both views connected: the order view says "loading" until it has read the
      // account's orders, which takes a while with both cores busy)
      const live =
        SYMBOLS.every((s) => s in snap.rows && PRICE.test(snap.rows[s][3] || "")) &&
        Object.values(snap.orders).some((status) => status) &&
        snap.status.length >= 2 &&
        snap.status.every((s) => s.includes("connected"));
      // (a torn frame is skipped so the kept picture shows a settled page)
      if (result.shot === null && live && !snap.torn && distinct.size >= MIN_DISTINCT) {
        await page.screenshot({ path: screenshot, fullPage: true });
        result.shotAtMs = elapsed();
        // what the picture shows: the views must still be there after it was taken
        result.shot = await page.evaluate(snapshot, doneText);
      }
      if (snap.doneLine || snap.errors.length) {
        result.doneLine = snap.doneLine;
        break; // the notebook has finished (or failed): the live window is over
      }
    }
    await page.waitForTimeout(100);
  }
  result.symbolsSeen = [...symbols].sort();
  if (result.shot === null) {
    // nothing qualified: keep a picture of the failure all the same
    await page.screenshot({ path: screenshot, fullPage: true });
  }
} catch (e) {
  result.error = String(e && e.stack ? e.stack : e).slice(0, 2000);
} finally {
  result.elapsedMs = elapsed();
  await context.close();
}
process.stdout.write(JSON.stringify(result) + "\n");
