"""Team life in #random and small talk in direct messages.

Each snippet is a short exchange; ``A``, ``B`` and ``C`` are filled with distinct members of the room
when the snippet is placed, and ``{A}``/``{B}``/``{C}`` in a text become their first names. Every
snippet is used at most once, so the chatter never repeats itself.
"""

from __future__ import annotations

__all__ = ["DM_SNIPPETS", "RANDOM_SNIPPETS"]

Snippet = tuple[tuple[str, str], ...]

RANDOM_SNIPPETS: list[Snippet] = [
    (
        ("A", "lunch? the noodle place reopened after the renovation"),
        ("B", "in. 12:15 so I can make my 1pm"),
        ("C", "save me a seat, 5 min behind you"),
    ),
    (
        ("A", "someone left a whole tray of cinnamon buns in the kitchen, go go go"),
        ("B", "confirming, they are still warm"),
        ("A", "update: two left"),
    ),
    (
        ("A", "the coffee machine is making the grinding noise again"),
        ("B", "descale light has been on since Monday, I'll do it after lunch"),
    ),
    (
        ("A", "anyone watching the cycling championship this weekend?"),
        ("B", "only the mountain stages, the flat ones put me to sleep"),
    ),
    (
        ("A", "my cat just walked across the keyboard during a call and muted everyone but me"),
        ("B", "promote the cat"),
        ("C", "honestly an improvement for some meetings"),
    ),
    (
        ("A", "recommendations for a podcast for a 5 hour drive?"),
        ("B", "the one about the history of shipping containers, weirdly gripping"),
        ("C", "anything with short episodes, you'll thank me at hour four"),
    ),
    (
        ("A", "it's snowing!! first snow of the year"),
        ("B", "not here, just sad grey rain"),
        ("A", "it's already melting, never mind"),
    ),
    (
        ("A", "pub quiz thursday? we need a sixth person"),
        ("B", "if there's a music round I'm useless but count me in"),
    ),
    (
        ("A", "finished the sourdough experiment: 78% hydration was a mistake"),
        ("B", "pancake bread is still bread"),
        ("A", "it is now officially focaccia"),
    ),
    (
        ("A", "PSA: the parking garage closes at 20:00 this week for repairs"),
        ("B", "good to know, I was about to stay late for the train"),
    ),
    (
        ("A", "who took the big whiteboard marker set"),
        ("B", "guilty, it's in meeting room 3, sorry"),
    ),
    (
        ("A", "running club back on tomorrow, 5 km easy pace, 7:30 by the river"),
        ("B", "easy pace meaning your easy or my easy?"),
        ("A", "your easy, promise"),
    ),
    (
        ("A", "my kid asked what I do at work and I said 'I make invoices go brrr'"),
        ("B", "accurate"),
        ("C", "put that on the careers page"),
    ),
    (
        ("A", "is it just me or is the office really cold today"),
        ("B", "heating schedule switched to winter mode only on Monday, facilities say tomorrow"),
    ),
    (
        ("A", "new plant in the corner is called Gerald"),
        ("B", "Gerald looks thirsty"),
        ("A", "Gerald is a cactus, Gerald is fine"),
    ),
    (
        ("A", "anyone been to the new climbing gym by the station?"),
        ("B", "yes, the bouldering wall is great, the lead routes are short"),
    ),
    (
        ("A", "board game night at mine on friday, I have pizza dough and a new co-op game"),
        ("B", "I'll bring drinks"),
        ("C", "can I bring my partner? they're competitive, be warned"),
    ),
    (("A", "the vending machine now takes cards 🎉"), ("B", "the end of an era of hoarding coins")),
    (
        ("A", "what's everyone reading? need something that is not about distributed systems"),
        ("B", "a detective series set in the 1920s, very comforting"),
        ("C", "a cookbook, does that count"),
    ),
    (
        ("A", "happy birthday {B}!! 🎂"),
        ("C", "happy birthday! cake in the kitchen at 3?"),
        ("B", "thank you all ☺️ yes cake at 3"),
    ),
    (("A", "somebody's phone alarm is going off in the quiet room"), ("B", "on it, it's mine, I'm so sorry")),
    (
        ("A", "fire drill at 11:00, take your laptops"),
        ("B", "and your coffee, apparently last time people left mugs everywhere"),
    ),
    (("A", "the bakery downstairs has pumpkin bread again"), ("B", "that's my afternoon plan sorted")),
    (("A", "hot take: tabs in spreadsheets should have colors by law"), ("B", "spicy but correct")),
    (
        ("A", "my bike got a flat on the way in, does anyone have a pump?"),
        ("B", "there's one in the bike room, top shelf, behind the helmets"),
    ),
    (
        ("A", "watched the documentary about deep-sea fish last night, I will never be the same"),
        ("B", "the anglerfish part?"),
        ("A", "the anglerfish part"),
    ),
    (
        ("A", "the 3rd floor microwave has a 10 person queue, 2nd floor is empty"),
        ("B", "you just ruined the secret"),
    ),
    (
        ("A", "charity run next month, we're at 8 people on the team page"),
        ("B", "signed up, the 10k this time"),
        ("C", "I'll be at the finish line with snacks, that's my contribution"),
    ),
    (
        ("A", "rate my desk setup, I finally got a monitor arm"),
        ("B", "9/10, needs a plant"),
        ("C", "cable management gets a 4"),
    ),
    (("A", "the soup today is lentil and it's excellent"), ("B", "noted, going down now")),
    (
        ("A", "out of curiosity how many of you actually read the terms of service of anything"),
        ("B", "only ours, and only because frank made me"),
    ),
    (
        ("A", "anyone want to split a delivery from the dumpling place?"),
        ("B", "yes, pork and chive for me"),
        ("C", "veggie ones please, I'll send you money"),
    ),
    (
        ("A", "just saw a fox in the parking lot at 8am"),
        ("B", "photo or it didn't happen"),
        ("A", "too slow, it was gone"),
    ),
    (
        ("A", "language exchange lunch is tomorrow, this week Spanish and Japanese tables"),
        ("B", "I'll sit at the Spanish table and mostly nod"),
    ),
    (
        ("A", "reminder: the kitchen fridge gets emptied on friday at 4pm"),
        ("B", "RIP to whoever owns the yogurt from september"),
    ),
    (
        ("A", "trying to learn the guitar at 35, my fingers hate me"),
        ("B", "first month is the worst, then it just gets bad instead of terrible"),
    ),
    (
        ("A", "the sunrise from the 5th floor this morning 🌅"),
        ("B", "that's the one upside of the early train"),
    ),
    (
        ("A", "anyone have a spare phone charger, the short kind?"),
        ("B", "drawer under the TV in the lounge has like six"),
    ),
    (
        ("A", "chess club is starting on wednesdays at lunch"),
        ("B", "I'm rated 'knows how the horse moves'"),
        ("A", "perfect, that's the target audience"),
    ),
    (
        ("A", "is anyone else's keyboard suddenly typing in a different layout"),
        ("B", "alt+shift, it gets me every month"),
    ),
    (
        ("A", "the team photo proofs are in, please pick your least bad one by friday"),
        ("B", "they are all bad, I'll pick the blurry one"),
    ),
    (
        ("A", "weekend plans?"),
        ("B", "helping my sister move, so: carrying boxes"),
        ("C", "nothing at all, and I'm very excited about it"),
    ),
    (
        ("A", "how was everyone's weekend?"),
        ("B", "went hiking, got rained on, still great"),
        ("C", "I assembled a bookshelf and have three screws left over"),
    ),
    (
        ("A", "I found the perfect tea for afternoon slumps: ginger and lemon"),
        ("B", "I'm a coffee person but I'll try it"),
    ),
    (
        ("A", "volunteering day next month: a food bank or the park cleanup, vote in the thread"),
        ("B", "food bank"),
        ("C", "park cleanup, I want to be outside"),
    ),
    (("A", "the elevator is out again, stairs it is"), ("B", "my step counter thanks the elevator")),
    (
        ("A", "anyone know a good place to get a suit tailored? wedding in december"),
        ("B", "the little shop next to the post office, fast and cheap"),
    ),
    (
        ("A", "my dog learned to open the fridge. this is not a drill"),
        ("B", "child lock time"),
        ("A", "she figured out the child lock in two days"),
    ),
    (
        ("A", "the office wifi password changed, it's on the whiteboard by reception"),
        ("B", "thank you, I thought my laptop was broken"),
    ),
    (("A", "quick poll: working from the office on friday?"), ("B", "yes"), ("C", "no, plumber is coming")),
    (
        ("A", "listening to the new synthwave album on repeat, productivity +20%"),
        ("B", "share the playlist"),
        ("A", "posted it in the music thread"),
    ),
    (
        ("A", "a pigeon got into the stairwell, facilities are handling it"),
        ("B", "the pigeon has been handled, it's outside and looks offended"),
    ),
    (
        ("A", "if you hear screaming from room 4 it's the marketing team's video shoot"),
        ("B", "good context, thanks"),
    ),
    (("A", "the new ramen place: 7/10 broth, 10/10 eggs"), ("B", "going tomorrow then")),
    (
        ("A", "anybody up for a quick walk around the block? my brain is soup"),
        ("B", "yes, meet at the door in 2"),
    ),
    (
        ("A", "strawberries at the market were unreal this morning"),
        ("B", "in november?? from where"),
        ("A", "greenhouse, don't ask, just enjoy"),
    ),
    (
        ("A", "does anyone know how to fix a squeaky office chair"),
        ("B", "facilities has a spray, or trade chairs with someone who doesn't notice"),
    ),
    (
        ("A", "the building's gym is free for employees now, you just need to register"),
        ("B", "until 8am only?"),
        ("A", "6–22, it changed"),
    ),
    (
        ("A", "first time making kimchi, it's alive and bubbling"),
        ("B", "keep it away from the office fridge please"),
    ),
    (
        ("A", "shoutout to whoever refilled the snack drawer with the salty pretzels"),
        ("B", "that was me, you're welcome"),
    ),
    (("A", "anyone doing the 30 days of drawing thing?"), ("B", "day 4, drew a mug, it looks like a bucket")),
    (("A", "my flight got cancelled so I'm here today after all"), ("B", "welcome back, I guess?")),
    (
        ("A", "the quiet room has a new lamp and it's the best place in the building now"),
        ("B", "don't tell anyone"),
    ),
    (("A", "rain all week according to the forecast"), ("B", "good week for focus time then")),
    (
        ("A", "does anyone want a free monitor? 24 inch, works fine"),
        ("B", "me! can I pick it up tomorrow?"),
        ("A", "it's yours, desk by the window"),
    ),
    (
        ("A", "pizza friday vote: the wood-fired place or the new one with the weird toppings"),
        ("B", "weird toppings, live a little"),
        ("C", "wood-fired, I've seen the weird toppings"),
    ),
    (
        ("A", "the marathon closes the bridge on sunday, plan your routes"),
        ("B", "or come cheer, we have a colleague running it"),
    ),
    (
        ("A", "lost: a blue water bottle with a lot of stickers"),
        ("B", "found one in meeting room 2, it's on the shelf by the door"),
    ),
    (
        ("A", "apparently it's national sandwich day, I don't make the rules"),
        ("B", "I will celebrate responsibly"),
    ),
    (
        ("A", "who wants to join a small group learning to make pasta from scratch?"),
        ("B", "me, if there's eating at the end"),
        ("A", "the eating is the point"),
    ),
    (
        ("A", "I have two spare tickets for the jazz thing on saturday"),
        ("B", "yes please, my partner loves jazz"),
    ),
    (("A", "hands up who forgot their badge today"), ("B", "✋"), ("C", "✋ reception knows me by name now")),
    (("A", "the new blinds on the south side are a game changer, no more screen glare"), ("B", "finally")),
    (
        ("A", "is there a team calendar for who's on holiday?"),
        ("B", "shared calendar 'Time off', add yourself"),
    ),
    (
        ("A", "I tried the cold plunge thing this morning"),
        ("B", "and?"),
        ("A", "never again, but I'm very awake"),
    ),
    (
        ("A", "the new espresso beans are much better than the last ones"),
        ("B", "agreed, the last ones tasted like a campfire"),
    ),
    (
        ("A", "does anyone know a good bike mechanic near the office?"),
        ("B", "the shop under the bridge, ask for the guy with the mustache, he's fast"),
    ),
    (
        ("A", "I'm organising a carpool for the winter party, 3 seats left"),
        ("B", "one seat please, I'm on your way"),
    ),
    (
        ("A", "my neighbour's rooster starts at 4:30 every morning"),
        ("B", "free alarm clock"),
        ("A", "an alarm clock I can't switch off"),
    ),
    (
        ("A", "we should do a team cooking night"),
        ("B", "only if someone else does the dishes"),
        ("C", "I volunteer as taster"),
    ),
    (
        ("A", "first frost on the car this morning, winter is here"),
        ("B", "time to find the ice scraper I lost last spring"),
    ),
    (
        ("A", "bringing in my old board games for the lounge, anything you'd like?"),
        ("B", "anything with trains or dragons"),
    ),
    (
        ("A", "the lunch talk on thursday is about beekeeping, from someone in finance"),
        ("B", "I'm there, I have so many questions"),
    ),
    (
        ("A", "cinema trip on sunday for the space movie?"),
        ("B", "the late showing, I have a family lunch"),
        ("A", "19:30 it is"),
    ),
    (
        ("A", "TIL the building has a rooftop terrace that's open until october"),
        ("B", "and now it's november, the universe is cruel"),
    ),
    (
        ("A", "who's got recommendations for a weekend city trip by train?"),
        ("B", "the old harbour town two hours north, great fish and bookshops"),
    ),
    (("A", "spotted: the printer on the 3rd floor works again"), ("B", "miracles do happen")),
    (
        ("A", "my tomato plant on the balcony produced exactly one tomato this year"),
        ("B", "a perfect yield"),
        ("A", "it was delicious, for the record"),
    ),
    (
        ("A", "anyone else doing the step challenge? I'm at 9k today"),
        ("B", "14k, but I walked to the wrong station"),
    ),
    (
        ("A", "the new hoodies with the logo arrived, sizes on the table by reception"),
        ("B", "they are so soft"),
        ("C", "I took a medium and regret nothing"),
    ),
    (
        ("A", "recommendations for a noise-cancelling headset under 150?"),
        ("B", "the one I have, sending you the model in a DM"),
    ),
    (("A", "taco tuesday at mine next week, who's in?"), ("B", "me, I'll bring salsa")),
    (
        ("A", "fun fact: our office plant Gerald has been watered by 4 people today"),
        ("B", "Gerald is drowning"),
        ("A", "Gerald is a cactus, please stop"),
    ),
    (
        ("A", "anyone up for the escape room on friday after work?"),
        ("B", "yes! I've never done one"),
        ("C", "last time I found the key in the first minute and felt like a genius"),
    ),
    (
        ("A", "what's the best rainy day snack, go"),
        ("B", "grilled cheese"),
        ("C", "hot chocolate with too many marshmallows"),
    ),
    (
        ("A", "how do people keep plants alive in this office"),
        ("B", "ask facilities for the low-light ones, the pothos is indestructible"),
    ),
]

DM_SNIPPETS: list[Snippet] = [
    (("A", "got 10 minutes for a call?"), ("B", "sure, after my 2pm"), ("A", "perfect, I'll send an invite")),
    (("A", "can we move our 1:1 to thursday? I have a dentist appointment"), ("B", "thursday 11:00 works")),
    (
        ("A", "thanks for the review earlier, the comments were really helpful"),
        ("B", "happy to, it was a nice PR"),
    ),
    (
        ("A", "are you in the office tomorrow?"),
        ("B", "in the morning only"),
        ("A", "let's grab a coffee at 10 then"),
    ),
    (
        ("A", "did you see the doc I shared about the Q1 planning?"),
        ("B", "skimmed it, will comment before friday"),
    ),
    (
        ("A", "I'm heading out early today, ping me on the phone if anything is on fire"),
        ("B", "will do, enjoy"),
    ),
    (("A", "quick question, is the design review this week or next?"), ("B", "this week, tuesday 15:00")),
    (
        ("A", "sorry, I double-booked. can you start the meeting without me?"),
        ("B", "no problem, I'll take notes"),
    ),
    (
        ("A", "how are you doing with the workload this sprint?"),
        ("B", "a bit tight but fine, the reviews pile up on mondays"),
        ("A", "let me know if I should shuffle something"),
    ),
    (
        ("A", "I'm writing my self-review, can I mention the project we did together?"),
        ("B", "of course, I'll back you up in mine"),
    ),
    (("A", "lunch tomorrow? my treat for helping me last week"), ("B", "deal, the noodle place?")),
    (
        ("A", "could you look at my slides for the all-hands before I present?"),
        ("B", "send them, I'll look tonight"),
    ),
    (
        ("A", "I'll be offline friday, long weekend 🌲"),
        ("B", "nice, where to?"),
        ("A", "a cabin with no signal, on purpose"),
    ),
    (
        ("A", "do you know who has the admin rights for the analytics tool?"),
        ("B", "alice or whoever is in the 'analytics-admins' group"),
    ),
    (("A", "your demo in the all-hands was great"), ("B", "thanks! I was so nervous the wifi would die")),
    (("A", "can I borrow your HDMI adapter for the client call?"), ("B", "top drawer, left side")),
    (
        ("A", "what's the name of that book you mentioned about writing docs?"),
        ("B", "the one about documentation as a product, I'll find the link"),
    ),
    (
        ("A", "heads-up: I'm taking 2 weeks off in december, from the 21st"),
        ("B", "noted, enjoy! let's sort out a handover the week before"),
    ),
    (
        ("A", "do you have a minute to rubber-duck something with me?"),
        ("B", "always, what is it"),
        ("A", "never mind, explaining it in my head solved it 😅"),
    ),
    (
        ("A", "are you going to the meetup on wednesday?"),
        ("B", "probably, the talk about observability sounds good"),
    ),
    (("A", "can you cover my office hours next monday?"), ("B", "yes, swap with my thursday slot?")),
    (
        ("A", "I saw you stayed late yesterday, everything ok?"),
        ("B", "yes, just wanted to finish a thing. won't make a habit of it"),
    ),
    (
        ("A", "feedback on your writing: the RFC was very clear, the summary at the top was perfect"),
        ("B", "thanks, I stole the format from carol"),
    ),
    (("A", "mind if I add you as a reviewer on the onboarding doc?"), ("B", "go ahead")),
    (("A", "is the team lunch still on for friday?"), ("B", "yes, 12:30, I booked the big table")),
    (("A", "want to pair on something this afternoon? I'm stuck on a test"), ("B", "sure, 3pm?")),
    (("A", "reminder that expense reports are due on the 25th"), ("B", "thank you, I always forget")),
    (
        ("A", "do you know when the expense tool will work with the new cards?"),
        ("B", "finance said next week, until then upload the receipts by hand"),
    ),
    (
        ("A", "would you be my buddy for the charity run? I need someone to slow me down"),
        ("B", "I'm the slowest person you know, perfect match"),
    ),
    (
        ("A", "quick sanity check before I send this email to the whole team?"),
        ("B", "send it over"),
        ("B", "looks good, maybe drop the last paragraph, it repeats the first"),
    ),
    (("A", "thanks for covering for me in the meeting yesterday"), ("B", "anytime, it was a short one")),
    (("A", "I'll be 10 minutes late for our sync, train stuck"), ("B", "no stress")),
    (
        ("A", "can I get your opinion on a draft RFC before I share it widely?"),
        ("B", "yes, tomorrow morning is best"),
    ),
    (
        ("A", "did you manage to get the conference ticket approved?"),
        ("B", "yes, alice approved it yesterday"),
        ("A", "great, let's share a train"),
    ),
    (
        ("A", "I'm going to be out for a doctor's appointment 10–12 tomorrow"),
        ("B", "thanks for the heads-up"),
    ),
    (("A", "how was your holiday?"), ("B", "wonderful, two weeks without a laptop"), ("A", "jealous")),
    (
        ("A", "do you still have the link to that talk about queues you mentioned?"),
        ("B", "found it, sending"),
    ),
    (
        ("A", "fyi I'm blocking friday mornings for focus time from now on"),
        ("B", "good idea, I might copy that"),
    ),
    (
        ("A", "could you introduce me to the person who built the old export code?"),
        ("B", "they left last year, but I can tell you what I remember"),
    ),
    (("A", "I think I owe you a coffee from last week"), ("B", "you do, and I will collect")),
    (("A", "want to present together at the next all-hands?"), ("B", "sure, 5 minutes each?")),
    (("A", "are you coming to the offsite retro follow-up?"), ("B", "yes, I put it in my calendar")),
    (
        ("A", "I'm trying to plan my time off for next year, when are you out?"),
        ("B", "two weeks in august, one in april"),
    ),
    (
        ("A", "would you mind being a reference for my internal transfer chat? nothing official"),
        ("B", "happy to, just tell me when"),
    ),
    (
        ("A", "can I shadow you on a customer call sometime?"),
        ("B", "yes, there's one on thursday, I'll add you"),
    ),
    (
        ("A", "I put a note in your calendar for the career chat next week"),
        ("B", "got it, I'll come with questions"),
    ),
]

# The daily lunch question: combined per day, each exact text at most once.
LUNCH_PLACES: list[str] = [
    "the noodle place",
    "the falafel stand",
    "the Thai place on the corner",
    "the salad bar",
    "the burrito truck",
    "the canteen",
    "the soup place",
    "the dumpling spot",
    "the pizza place by the station",
    "the new poke bar",
    "the Vietnamese place",
    "the bakery café",
    "the ramen place",
    "the curry house",
]
LUNCH_TIMES: list[str] = ["11:45", "12:00", "12:15", "12:30", "12:45", "noon"]
LUNCH_ASK: list[str] = [
    "lunch? thinking {place}",
    "{place} for lunch, anyone?",
    "hungry. {place} at {time}?",
    "who's up for {place} today?",
    "lunch crew: {place} at {time}",
    "anyone want to try {place}?",
    "{time} lunch at {place}?",
    "craving {place}, who's coming",
]
LUNCH_YES: list[str] = [
    "in",
    "in, {time} is fine",
    "count me in for {place}",
    "yes! meet at the door",
    "in, but I need to be back by 13:00",
    "I'm in if we go at {time}",
    "sure, {place} is always good",
    "coming, 2 min",
    "in, save me a seat",
    "yes please, I skipped breakfast",
    "{place} again? fine, in 😄",
    "on my way down",
]
LUNCH_NO: list[str] = [
    "can't today, {excuse}",
    "skipping, {excuse}",
    "next time, {excuse}",
    "not today, {excuse} 😔",
]
LUNCH_EXCUSES: list[str] = [
    "back-to-back calls until 2",
    "brought leftovers",
    "dentist at 12:30",
    "interview at noon",
    "trying to finish a review before the train",
    "eating at my desk, deadline",
    "already ate after an early meeting",
    "gym at lunch",
    "meeting a friend",
    "on a call with a customer",
    "doing the school pickup",
    "working from home today",
    "I have a workshop until 13:30",
]
