// Load report pages in Debian's headless Chromium (playwright-core from
// tests/browser/node_modules: no browser download) at each width and colour scheme, and
// measure what a reader sees without scrolling: the headline sentence and its BRL total
// (inside the window, the page not wider than the window), the charts drawn and the
// "insufficient coverage" notes, and the colours of the text and of a chart's labels; then
// take a screenshot of the window and one of the whole page.
//
//   node report_probe.mjs <jobs.json> <profile-dir> <playwright-core dir>
//
// jobs.json: [{url, name, width, height, scheme, shot, full}]. Requests to anything but
// file:// are refused. One JSON array goes to stdout; the pytest side does the asserting.
import { readFileSync } from "node:fs";
import { pathToFileURL } from "node:url";

const [jobsFile, profile, pwDir] = process.argv.slice(2);
const { chromium } = await import(pathToFileURL(`${pwDir}/index.mjs`).href);
const jobs = JSON.parse(readFileSync(jobsFile, "utf8"));

const context = await chromium.launchPersistentContext(profile, {
  executablePath: "/usr/bin/chromium",
  headless: true,
  args: ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking"],
});
const results = [];
try {
  const blocked = [];
  await context.route("**/*", (route) => {
    const u = route.request().url();
    if (u.startsWith("file:")) return route.continue();
    blocked.push(u);
    return route.abort();
  });
  const page = context.pages()[0] || (await context.newPage());
  const pageErrors = [];
  page.on("pageerror", (e) => pageErrors.push(String(e)));
  for (const job of jobs) {
    await page.setViewportSize({ width: job.width, height: job.height });
    await page.emulateMedia({ colorScheme: job.scheme });
    await page.goto(job.url);
    await page.evaluate(() => document.fonts.ready);
    const seen = await page.evaluate(() => {
      const rect = (el) => {
        if (!el) return null;
        const r = el.getBoundingClientRect();
        return { left: r.left, right: r.right, top: r.top, bottom: r.bottom, width: r.width };
      };
      const colour = (el) => (el ? getComputedStyle(el).color : null);
      const headline = document.querySelector(".tk-headline");
      const total = document.querySelector(".tk-total");
      const chartText = document.querySelector("figure svg.tk-fig text");
      // the worst orders' table: the headers of its first columns, where a reader sees them
      const worstTitle = [...document.querySelectorAll("h3")].find((h) => h.textContent === "Worst orders");
      let worstHeads = [];
      if (worstTitle) {
        let el = worstTitle.nextElementSibling;
        while (el && !el.classList.contains("tbl")) el = el.nextElementSibling;
        if (el) worstHeads = [...el.querySelectorAll("th")].slice(0, 3).map((th) => ({ text: th.textContent, ...rect(th) }));
      }
      return {
        innerWidth: window.innerWidth,
        innerHeight: window.innerHeight,
        scrollWidth: document.documentElement.scrollWidth,
        headline: rect(headline),
        headlineText: headline ? headline.textContent.trim() : null,
        total: rect(total),
        totalText: total ? total.textContent.trim() : null,
        figures: [...document.querySelectorAll("figure[data-figure]")].map((f) => f.dataset.figure),
        gaps: [...document.querySelectorAll(".tk-chart-gap")].map((p) => ({
          figure: p.dataset.figure,
          text: p.textContent.trim(),
        })),
        insufficient: [...document.querySelectorAll(".tk-insufficient")].map((e) => e.textContent.trim()),
        orderCharts: document.querySelectorAll("figure[data-order] svg").length,
        bodyColour: getComputedStyle(document.body).color,
        bodyBackground: getComputedStyle(document.body).backgroundColor,
        chartTextColour: chartText ? getComputedStyle(chartText).fill : null,
        chartColour: colour(document.querySelector("figure svg.tk-fig")),
        worstHeads,
      };
    });
    await page.screenshot({ path: job.shot });
    if (job.full) await page.screenshot({ path: job.full, fullPage: true });
    results.push({ ...job, ...seen });
  }
  results.push({ blocked, pageErrors });
} catch (e) {
  results.push({ error: String(e && e.stack ? e.stack : e) });
} finally {
  await context.close();
}
process.stdout.write(JSON.stringify(results));
