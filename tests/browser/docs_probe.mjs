// Open a notebook page of the documentation site in Debian's headless Chromium
// (playwright-core from tests/browser/node_modules: no browser download) with no network,
// and report what its widget outputs rendered:
//
//   node docs_probe.mjs <page-url> <screenshot.png> <profile-dir> <playwright-core dir>
//
// Requests to anything but file:// and loopback are refused and listed, so a page that
// needs a CDN shows it. Waits for the HTML manager to replace the page's widget-view
// scripts (a live view's rows), then takes a full-page screenshot. One JSON object goes to
// stdout; the pytest side does the asserting.
import { pathToFileURL } from "node:url";

const [url, screenshot, profile, pwDir] = process.argv.slice(2);
const { chromium } = await import(pathToFileURL(`${pwDir}/index.mjs`).href);

const context = await chromium.launchPersistentContext(profile, {
  executablePath: "/usr/bin/chromium",
  headless: true,
  viewport: { width: 1280, height: 900 },
  args: ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking"],
});
const result = { blocked: [], consoleErrors: [], pageErrors: [], error: null };
try {
  await context.route("**/*", (route) => {
    const u = route.request().url();
    if (u.startsWith("file:") || /^https?:\/\/127\.0\.0\.1[:/]/.test(u)) return route.continue();
    result.blocked.push(u);
    return route.abort();
  });
  const page = context.pages()[0] || (await context.newPage());
  page.on("pageerror", (e) => result.pageErrors.push(String(e)));
  page.on("console", (m) => m.type() === "error" && result.consoleErrors.push(m.text()));
  await page.goto(url, { waitUntil: "load" });
  try {
    await page.waitForSelector(".tk-orow[data-order], .tk-row[data-symbol]", { timeout: 20000 });
  } catch (e) {
    result.error = `no live view rendered: ${e.message.split("\n")[0]}`;
  }
  await page.waitForTimeout(300); // the other outputs of the page, rendered in the same pass
  Object.assign(
    result,
    await page.evaluate(() => {
      const shown = (el) => el.getClientRects().length > 0;
      return {
        widgetViews: document.querySelectorAll('script[type="application/vnd.jupyter.widget-view+json"]').length,
        widgets: document.querySelectorAll(".jupyter-widgets.widget-vbox, .jupyter-widgets.widget-container").length,
        tickerRows: [...document.querySelectorAll(".tk-row[data-symbol]")].filter(shown).map((r) => r.dataset.symbol),
        orderRows: [...document.querySelectorAll(".tk-orow[data-order]")].filter(shown).map((r) => r.dataset.order),
        status: [...document.querySelectorAll(".tk-status")].map((s) => s.textContent.trim()),
        loader: [...document.querySelectorAll("script[data-tk-widgets]")].map((s) => s.getAttribute("src")),
      };
    }),
  );
  await page.screenshot({ path: screenshot, fullPage: true });
} catch (e) {
  result.error = String(e);
} finally {
  await context.close();
}
console.log(JSON.stringify(result));
