"""The Halden workspace's background: the everyday chat around the written conversations.

Standups, review requests, deploy notices, support triage, lunch plans, Japanese and Chinese office
chatter, small DMs. It is generated (seeded, so the same every time) to give the search volume and
near misses, and it stays off the judged topics: its work items are logging, docs, dependency bumps,
dashboards, invoices and the like, never a pooler, a certificate, a bootloader or a price. Texts are
made distinct (a repeat is drawn again), as chat mostly is.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta

from .workspace import PEOPLE, ROOMS, Room

__all__ = [
    "BACKGROUND_SEED",
    "FIRST_DAY",
    "LAST_DAY",
    "BackgroundMessage",
    "PlanLine",
    "draw_background",
    "generate_background",
]

BACKGROUND_SEED = 2027
FIRST_DAY = date(2027, 1, 4)
LAST_DAY = date(2027, 4, 30)
# Draws of one template before giving up on finding a text not used yet (attempts).
_MAX_DRAWS = 50
# Working hours in UTC per office (first hour, last hour): Lisbon, Tokyo (UTC+9), Shenzhen (UTC+8).
_HOURS = {"lisbon": (8, 18), "tokyo": (0, 9), "shenzhen": (1, 10)}
_OFFICE = {p.username: p.office for p in PEOPLE}


@dataclass(frozen=True)
class BackgroundMessage:
    id: str
    room: Room
    user: str
    ts: datetime
    text: str


_PLATFORM_WORK = (
    "bumped structlog in the api repo",
    "moved the feature flag definitions into one yaml file",
    "wrote the ADR for splitting the admin console",
    "added OpenTelemetry spans to the email sender",
    "cleaned up the unused helm values",
    "made mypy strict on the accounts module",
    "fixed the flaky lint step in the docs repo",
    "reviewed the pydantic v2 migration branch",
    "updated the runbook index page",
    "deleted three dead cron jobs in the report worker",
    "added a healthcheck endpoint to admin-tool",
    "paired on the locust load test scripts",
    "rewrote the staging seed data script",
    "set up renovate for the internal CLI",
    "tidied the grafana folder structure",
    "went through the CODEOWNERS file",
    "documented the local dev setup on Apple silicon",
    "upgraded httpx in the integration tests",
    "removed the old v0 API docs",
    "profiled the admin console's search page",
    "wrote tests for the invoice PDF renderer",
    "added request ids to the web-console logs",
    "migrated the report worker to the new base image",
    "reviewed the email template refactor",
)
_MOBILE_WORK = (
    "polished the settings screen animations",
    "moved the networking layer to the new client",
    "fixed the keyboard covering the room name field",
    "added snapshot tests for the home screen",
    "updated the Kotlin and Gradle versions",
    "cleaned up unused image assets",
    "wrote the accessibility labels for the room list",
    "fixed the pull-to-refresh jank on older iPhones",
    "reviewed the widget extension PR",
    "made the temperature units follow the system locale",
    "refactored the login view model",
    "added analytics events to the room detail screen",
    "fixed a layout bug on small Android screens",
    "triaged the app store reviews from last week",
    "sped up the iOS test target",
    "updated the onboarding illustrations from design",
    "fixed the haptics on the room rename sheet",
    "moved the theme colours into the design tokens",
)
_FIRMWARE_WORK = (
    "cleaned up the logging macros in the sensor driver",
    "reviewed the unit tests for the scheduler module",
    "soldered two more bench units for the lab",
    "updated the flashing guide for new colleagues",
    "measured current draw on the dev board",
    "refactored the LED state machine",
    "ran the long stability test over the weekend",
    "ported the button debounce code to the new HAL",
    "fixed compiler warnings in the modbus module",
    "wrote the test plan for the humidity calibration",
    "checked the lab's thermal readings",
    "updated the SDK submodule",
    "labelled the bench units in the cabinet",
    "cleaned the shared firmware build scripts",
)
_BLOCKERS = (
    "no blockers",
    "nothing blocking",
    "blocked on a review",
    "waiting on design feedback",
    "no blockers, out at 16:00 for the dentist",
    "nothing blocking, in meetings most of the afternoon",
)
_STANDUP_FORMS = (
    "standup: yesterday I {done}. today {next}. {blocker}",
    "y: {done} / t: {next} / {blocker}",
    "{done} yesterday; today {next}. {blocker}",
    "morning! yesterday {done}, today {next}, {blocker}",
)
_REVIEW_FORMS = (
    "PR #{n}: {what}. small one, could someone take a look?",
    "could I get a review on #{n}? it {what_past}",
    "#{n} is ready for review ({what})",
    "approved #{n} with one nit 👍",
    "left some comments on #{n}, nothing major",
    "merged #{n}, thanks for the quick review",
)
_SERVICES = ("web-console", "admin-tool", "docs-site", "report-worker", "email-sender", "internal-cli")
_DEPLOY_FORMS = (
    "✅ {service} {version} deployed to {env} ({sha})",
    "🚀 {service} {version} is on {env}",
    "deploying {service} {version} to {env}, ping me if something looks off",
    "rolled {service} forward to {version} on {env} ({sha})",
)
_ALERT_FORMS = (
    "alert resolved: {service} p95 latency above {ms}ms for 5 minutes, recovered by itself",
    "heads up: {service} had a spike of {count} errors at {clock}, one bad batch, already fine",
    "low priority: {service} disk at {pct}% on the {env} box, I'll clean up the old logs",
    "{service} restarted once on {env} at {clock}, looks like a noisy neighbour, watching it",
)
_SUPPORT_ISSUES = (
    ("wants an invoice with their company VAT number", "sent a corrected invoice"),
    ("asked to change the delivery address after ordering", "updated before it shipped"),
    ("asked how to add a second person to their home", "sent the help article on sharing"),
    ("asked how to rename a room in the app", "walked them through it"),
    ("is moving house and wants to hand the hub to the new owner", "explained the transfer flow"),
    ("can't find the serial number", "it's on the back label, sent a photo"),
    ("asked about the warranty period", "two years in the EU, told them"),
    ("wants the app in Polish", "logged it as a feature request"),
    ("double ordered by accident", "cancelled the second order"),
    ("asked whether the hub works without internet", "explained local control"),
    ("wants to change the email on the account", "verified and changed it"),
    ("asked for a paper manual", "sent the PDF and posted one"),
    ("asked how to export their temperature history", "pointed them to the CSV export"),
    ("reported a typo in the app's French text", "passed it to the translators"),
    ("asked if we ship to Switzerland", "yes, with customs fees, told them"),
    ("lost the mounting screws", "shipping a spare set"),
)
_SUPPORT_FORMS = (
    "ticket #{n}: customer {issue}, {resolution}",
    "#{n} — {issue}. {resolution}",
    "closed #{n}: {issue}; {resolution}",
)
_LUNCH_PLACES = (
    "the ramen place",
    "the Indian place on Rua Augusta",
    "the bifana stand",
    "Time Out market",
    "the sushi place near the river",
    "the vegan café",
    "the pizza place with the long queue",
    "the Thai takeaway",
)
_RANDOM_FORMS = (
    "anyone up for lunch at {place} around {clock}?",
    "going to {place} at {clock}, who's coming?",
    "{place} was great today, recommend the {dish}",
    "weekend plans? I'm going {activity} 🙂",
    "back from {trip}, legs are dead",
    "song of the day: {song}",
    "who left the {thing} in the meeting room? it's by the door now",
    "it's {weather} today, bring {gear}",
    "cake in the kitchen for {reason} 🍰",
    "does anyone have a {item} I can borrow until {day}?",
)
_DISHES = ("curry", "katsu", "pastel de nata", "tom yum", "margherita", "falafel wrap", "ramen special")
_ACTIVITIES = (
    "hiking in Sintra",
    "surfing in Ericeira",
    "to a concert in Porto",
    "climbing at the bouldering gym",
    "cycling along the river",
    "to my cousin's wedding",
    "camping in the Alentejo",
    "to the flea market",
)
_TRIPS = (
    "Sintra",
    "a surf weekend in Ericeira",
    "the climbing gym",
    "a long ride along the river",
    "Serra da Estrela",
)
_SONGS = (
    "Khruangbin – Maria También",
    "Nils Frahm – Says",
    "Fontaines D.C. – Starburster",
    "Madredeus – Haja o que houver",
)
_THINGS = ("blue umbrella", "charger with the sticker", "box of biscuits", "black hoodie", "water bottle")
_WEATHER = (("pouring", "an umbrella"), ("freezing", "a jacket"), ("windy", "a hat"), ("sunny", "sunglasses"))
_REASONS = (
    "Priya's birthday",
    "no reason",
    "the end of the quarter",
    "Jonah's first year here",
    "Ava's birthday",
)
_ITEMS = ("HDMI adapter", "USB-C hub", "standing desk converter", "spare keyboard", "camera tripod")
_GENERAL_FORMS = (
    "reminder: expense reports for {month} are due by the {nth}",
    "all-hands on {weekday} at {clock} UTC: {agenda}",
    "the big meeting room is booked on {weekday} afternoon for {event}",
    '📚 the book club reads "{book}" this month',
    "friendly reminder to update your holidays in the calendar before {month} ends",
    "the {floor} floor printer is fixed, thanks to whoever called the technician",
    "photos from {event} are in the shared drive 📸",
)
_AGENDAS = (
    "product demos and Q&A",
    "the roadmap for next quarter",
    "team updates and a quiz",
    "customer stories",
)
_EVENTS = (
    "the design review",
    "the quarterly planning",
    "the interview day",
    "the partner visit",
    "the team lunch",
)
_BOOKS = (
    "The Design of Everyday Things",
    "Accelerate",
    "Project Hail Mary",
    "Thinking in Systems",
    "Klara and the Sun",
)
_DATA_FORMS = (
    "quick SQL question: how do I get {metric} per {grain} without double counting?",
    "the {dashboard} dashboard is refreshed, {note}",
    "pulled {metric} for {who}, it's in the shared sheet",
    "can someone review my notebook on {metric}? it's in the analytics repo",
)
_METRICS = ("sessions per user", "app opens", "setpoint changes", "signups", "help article views", "orders")
_GRAINS = ("week", "country", "app version", "signup month")
_DASHBOARDS = ("sales", "app usage", "support volume", "orders", "web traffic")
_NOTES = (
    "new filters on the top",
    "the country breakdown is fixed",
    "now with a weekly view",
    "faster queries now",
)
_WHO = ("the marketing team", "the newsletter", "the partner meeting", "Oscar's update")
_JA_FORMS = (
    "おはようございます。今日は{weather_ja}ですね",
    "今日のランチは{food_ja}にします。一緒に行きませんか",
    "{day_ja}は午後から{place_ja}に行くので、少し返信が遅れます",
    "お疲れさまです。{item_ja}を会議室に置いておきました",
    "来週の{day_ja}、オフィスの{thing_ja}の点検があります",
    "{food_ja}おいしかったです！また行きましょう",
)
_WEATHER_JA = ("いい天気", "雨", "寒い", "風が強い", "暖かい")
_FOOD_JA = ("ラーメン", "カレー", "お寿司", "うどん", "定食", "パスタ")
_DAYS_JA = ("月曜日", "火曜日", "水曜日", "木曜日", "金曜日")
_PLACES_JA = ("銀行", "病院", "郵便局", "区役所")
_ITEMS_JA = ("お土産のお菓子", "新しいホワイトボードのペン", "延長コード", "傘")
_THINGS_JA = ("エアコン", "消防設備", "コピー機", "エレベーター")
_ZH_FORMS = (
    "今天发往{warehouse}的货：{count} 台，已经装柜",
    "{weekday_zh}下午开生产例会，{topic_zh}",
    "明天 SMT 线做例行保养，{hours} 小时",
    "今天的出货单已经发到邮箱了，一共 {count} 台",
    "食堂今天有{food_zh}，大家早点去",
    "下周{weekday_zh}物流公司来取货，{count} 箱",
)
_WAREHOUSES = ("荷兰仓库", "波兰仓库", "英国仓库", "日本仓库")
_WEEKDAYS_ZH = ("周一", "周二", "周三", "周四", "周五")
_TOPICS_ZH = ("讨论下个月的排产", "看一下上周的出货数据", "安排新员工培训", "检查仓库的库存")
_FOOD_ZH = ("饺子", "红烧肉", "牛肉面", "煲仔饭")
_PRIVATE_FORMS: dict[str, tuple[str, ...]] = {
    "leadership": (
        "agenda for Monday's leadership sync: {a} and {b}",
        "moved our sync to {weekday} at {clock}, clash with {event}",
        "notes from the leadership sync are in the drive",
    ),
    "hiring": (
        "scheduled {small} phone screens for the {role} role this week",
        "the {role} job ad got {count} applications so far",
        "interview panel for {weekday}: can someone swap with me for the {clock} slot?",
    ),
    "security": (
        "monthly access review done for {system}, removed {small} stale accounts",
        "phishing test results: {small} clicks out of 60, better than last time",
        "laptop encryption report: all {count} laptops compliant",
    ),
    "pricing": (
        "competitor watch: {competitor} changed their {page} page, screenshots in the drive",
        "updated the partner discount sheet for {month}",
    ),
}
_LEADER_TOPICS = (
    "the Q2 goals",
    "office budget",
    "the partner pipeline",
    "the customer survey",
    "team health",
)
_ROLES = ("QA engineer", "embedded engineer", "product designer", "data engineer")
_SYSTEMS = ("GitHub", "Google Workspace", "the VPN", "Grafana", "the HR system")
_COMPETITORS = ("tado", "Netatmo", "Nest", "Hive")
_PAGES = ("comparison", "installer", "features", "FAQ")
_DM_FORMS = (
    "got a minute for a quick call about {topic}?",
    "thanks for the help with {topic} yesterday!",
    "I'll be ten minutes late to our 1:1",
    "can we move our 1:1 to {weekday}?",
    "sent you the doc about {topic}, no rush",
    "coffee at {clock}?",
    "did you see my comment on {topic}?",
)
_DM_TOPICS = (
    "the planning doc",
    "the team offsite budget",
    "my PR",
    "the onboarding doc",
    "the interview notes",
    "next week",
)
_MONTHS = ("January", "February", "March", "April")
_WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday")
_ENVS = ("staging", "production", "sandbox")


def _clock(rng: random.Random) -> str:
    return f"{rng.randint(8, 17):02d}:{rng.choice((0, 15, 30, 45)):02d}"


def _fill(rng: random.Random, form: str, **fixed: str) -> str:
    values = {
        "place": rng.choice(_LUNCH_PLACES),
        "clock": _clock(rng),
        "dish": rng.choice(_DISHES),
        "activity": rng.choice(_ACTIVITIES),
        "trip": rng.choice(_TRIPS),
        "song": rng.choice(_SONGS),
        "thing": rng.choice(_THINGS),
        "reason": rng.choice(_REASONS),
        "item": rng.choice(_ITEMS),
        "day": rng.choice(_WEEKDAYS),
        "weekday": rng.choice(_WEEKDAYS),
        "month": rng.choice(_MONTHS),
        "nth": f"{rng.randint(3, 9)}th",
        "agenda": rng.choice(_AGENDAS),
        "event": rng.choice(_EVENTS),
        "book": rng.choice(_BOOKS),
        "floor": rng.choice(("first", "second", "third")),
        "metric": rng.choice(_METRICS),
        "grain": rng.choice(_GRAINS),
        "dashboard": rng.choice(_DASHBOARDS),
        "note": rng.choice(_NOTES),
        "who": rng.choice(_WHO),
        "weather_ja": rng.choice(_WEATHER_JA),
        "food_ja": rng.choice(_FOOD_JA),
        "day_ja": rng.choice(_DAYS_JA),
        "place_ja": rng.choice(_PLACES_JA),
        "item_ja": rng.choice(_ITEMS_JA),
        "thing_ja": rng.choice(_THINGS_JA),
        "warehouse": rng.choice(_WAREHOUSES),
        "count": str(rng.randint(3, 60) * (rng.choice((1, 10, 100)))),
        "small": str(rng.randint(1, 9)),
        "weekday_zh": rng.choice(_WEEKDAYS_ZH),
        "topic_zh": rng.choice(_TOPICS_ZH),
        "hours": str(rng.randint(2, 6)),
        "food_zh": rng.choice(_FOOD_ZH),
        "role": rng.choice(_ROLES),
        "system": rng.choice(_SYSTEMS),
        "competitor": rng.choice(_COMPETITORS),
        "page": rng.choice(_PAGES),
        "topic": rng.choice(_DM_TOPICS),
        "service": rng.choice(_SERVICES),
        "version": f"{rng.randint(1, 3)}.{rng.randint(0, 19)}.{rng.randint(0, 9)}",
        "env": rng.choice(_ENVS),
        "sha": f"{rng.getrandbits(28):07x}",
        "ms": str(rng.randint(4, 19) * 50),
        "pct": str(rng.randint(70, 84)),
    }
    weather, gear = rng.choice(_WEATHER)
    first_topic, second_topic = rng.sample(_LEADER_TOPICS, 2)
    values.update(weather=weather, gear=gear, a=first_topic, b=second_topic)
    values.update(fixed)
    return form.format(**values)


def _standup(rng: random.Random, work: Sequence[str]) -> str:
    done, upcoming = rng.sample(list(work), 2)
    return _fill(rng, rng.choice(_STANDUP_FORMS), done=done, next=upcoming, blocker=rng.choice(_BLOCKERS))


def _review(rng: random.Random, work: Sequence[str]) -> str:
    what = rng.choice(work)
    return _fill(rng, rng.choice(_REVIEW_FORMS), n=str(rng.randint(1200, 2999)), what=what, what_past=what)


def _support(rng: random.Random) -> str:
    issue, resolution = rng.choice(_SUPPORT_ISSUES)
    return _fill(
        rng, rng.choice(_SUPPORT_FORMS), n=str(rng.randint(40000, 49999)), issue=issue, resolution=resolution
    )


# (room, how many messages, who may post (None: any member), how a text is drawn)
_Draw = Callable[[random.Random], str]


def _one_of(forms: Sequence[str]) -> _Draw:
    return lambda rng: _fill(rng, rng.choice(forms))


_PLAN: tuple[tuple[str, int, tuple[str, ...] | None, _Draw], ...] = (
    ("platform", 110, ("tomas", "priya", "jonah", "dmitri"), lambda r: _standup(r, _PLATFORM_WORK)),
    ("platform", 60, ("tomas", "priya", "jonah", "dmitri", "nora"), lambda r: _review(r, _PLATFORM_WORK)),
    ("mobile", 60, ("sam", "nora"), lambda r: _standup(r, _MOBILE_WORK)),
    ("mobile", 45, ("sam", "nora", "priya"), lambda r: _review(r, _MOBILE_WORK)),
    ("firmware", 45, ("lena", "kenji"), lambda r: _standup(r, _FIRMWARE_WORK)),
    ("firmware", 25, ("lena", "kenji"), lambda r: _review(r, _FIRMWARE_WORK)),
    ("releases", 80, ("tomas", "priya", "jonah", "sam", "nora"), lambda r: _fill(r, r.choice(_DEPLOY_FORMS))),
    ("incidents", 30, ("jonah", "priya", "tomas"), lambda r: _fill(r, r.choice(_ALERT_FORMS))),
    ("support", 130, ("rafael", "yuki", "nora"), _support),
    ("random", 150, None, lambda r: _fill(r, r.choice(_RANDOM_FORMS))),
    ("general", 60, ("ava", "oscar", "maya", "ines"), lambda r: _fill(r, r.choice(_GENERAL_FORMS))),
    ("data", 45, ("hana", "priya", "ines"), lambda r: _fill(r, r.choice(_DATA_FORMS))),
    ("tokyo", 60, ("kenji", "yuki"), lambda r: _fill(r, r.choice(_JA_FORMS))),
    ("manufacturing", 70, ("wei", "mei"), lambda r: _fill(r, r.choice(_ZH_FORMS))),
    *((room, 18, None, _one_of(forms)) for room, forms in _PRIVATE_FORMS.items()),
    *((room.name, 12, None, lambda r: _fill(r, r.choice(_DM_FORMS))) for room in ROOMS if room.type == "d"),
)
_WORKDAYS = tuple(
    FIRST_DAY + timedelta(days=n)
    for n in range((LAST_DAY - FIRST_DAY).days + 1)
    if (FIRST_DAY + timedelta(days=n)).weekday() < 5
)


def _moment(rng: random.Random, user: str) -> datetime:
    first, last = _HOURS[_OFFICE[user]]
    day = rng.choice(_WORKDAYS)
    return datetime(
        day.year, day.month, day.day, rng.randint(first, last - 1), rng.randint(0, 59), tzinfo=UTC
    )


def generate_background(taken: set[str], seed: int = BACKGROUND_SEED) -> list[BackgroundMessage]:
    """The background messages, oldest first; `taken` holds texts already used (the written ones)."""
    return draw_background(_PLAN, ROOMS, _moment, taken, seed)


# A plan's line: (room, how many messages, who may post (None: any member), how a text is drawn).
PlanLine = tuple[str, int, tuple[str, ...] | None, _Draw]


def draw_background(
    plan: Sequence[PlanLine],
    rooms: Sequence[Room],
    moment: Callable[[random.Random, str], datetime],
    taken: set[str],
    seed: int,
) -> list[BackgroundMessage]:
    """A workspace's background drawn from `plan` (Halden's, or another set's such as bench/ferry's):
    texts drawn until distinct from `taken` and from each other, a poster per text, `moment` placing
    it in the poster's hours; ids ``bg-0001``... oldest first."""
    rng = random.Random(seed)
    by_name = {room.name: room for room in rooms}
    used = set(taken)
    found: list[BackgroundMessage] = []
    for room_name, count, posters, draw in plan:
        room = by_name[room_name]
        people = posters or room.members
        for _ in range(count):
            for _attempt in range(_MAX_DRAWS):
                text = draw(rng)
                if text not in used:
                    break
            else:
                continue  # the pool is exhausted for this room: fewer messages rather than repeats
            used.add(text)
            user = rng.choice(people)
            found.append(BackgroundMessage("", room, user, moment(rng, user), text))
    found.sort(key=lambda m: (m.ts, m.room.name, m.text))
    return [BackgroundMessage(f"bg-{n:04d}", m.room, m.user, m.ts, m.text) for n, m in enumerate(found, 1)]
