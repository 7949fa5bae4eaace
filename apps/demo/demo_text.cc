#include "demo/demo_text.h"

#include <array>

namespace kvengine::demo {
namespace {

constexpr std::array<std::string_view, 5> kSystemPrompt = {
    "You are the support assistant of Northgate Cycles, a family-run bicycle shop with two "
    "workshops and a small online store. Answer customers politely, briefly and accurately. "
    "When you are not sure of a fact, say so and offer to pass the question to a mechanic.",
    "Opening hours: Monday to Friday from nine in the morning to six in the evening, Saturday "
    "from ten to four, closed on Sundays and public holidays. The east workshop takes repairs "
    "without an appointment before noon; the west workshop only works by appointment.",
    "Services: a basic safety check costs twenty-five euros and takes about half an hour; a full "
    "service costs eighty euros and includes cleaning the drivetrain, truing both wheels, "
    "adjusting brakes and gears, and checking every bolt against the maker's torque figures. "
    "Electric bikes need a battery and motor diagnosis that costs an extra fifteen euros.",
    "Orders from the online store ship within two working days. Customers may return unused "
    "parts within thirty days with the receipt. Bicycles bought in the shop get a free first "
    "service within three months. Never promise a delivery date that the warehouse has not "
    "confirmed, and never give medical or legal advice.",
    "Keep answers under one hundred words unless the customer asks for detail. Use plain "
    "language, avoid jargon, and end every answer by asking whether there is anything else you "
    "can help with.",
};

constexpr std::array<std::string_view, 16> kUserQuestions = {
    "Can I bring my bike in on Saturday afternoon without booking?",
    "How much does a full service cost for an electric bike?",
    "My rear brake squeaks when it rains. Is that dangerous?",
    "Do you ship spare inner tubes to another country?",
    "I bought a bike from you two months ago. Is the first service really free?",
    "Which workshop should I visit if I cannot make an appointment?",
    "Can I return a saddle I have already ridden on for a week?",
    "How long does a basic safety check take?",
    "Are you open on Easter Monday?",
    "What is included when you true the wheels?",
    "My chain keeps slipping on the smallest cog. What should I do?",
    "Can you fit a child seat to a carbon frame?",
    "Do you sell helmets for adults in the shop?",
    "How do I know if my tyres need replacing?",
    "Will my order arrive before the weekend if I order today?",
    "Can a mechanic look at my battery while I wait?",
};

constexpr std::array<std::string_view, 6> kDocument = {
    "Annual water-supply report of the town of Elmsford. This report describes where the town's "
    "drinking water comes from, how it is treated, how much of it was used during the year, and "
    "which works were carried out on the network. It is published every spring so that every "
    "household can see what it pays for and how the supply is changing.",
    "Sources. Two thirds of the water comes from three wells that draw on the chalk aquifer "
    "north of the river. The remaining third is taken from the river itself at the old mill "
    "intake, where a screen removes leaves and debris before the water enters the settling "
    "ponds. In dry summers the river intake is reduced and the wells carry a larger share.",
    "Treatment. Water from both sources passes through sand filters and an activated carbon "
    "stage, and is then disinfected with ultraviolet light and a small dose of chlorine that "
    "keeps it safe on its way through the pipes. Samples are taken every day at the plant and "
    "every week at twelve taps across the town; all of them met the legal limits this year.",
    "Consumption. The town used on average four thousand two hundred cubic metres a day, five "
    "percent less than the year before. Households account for about sixty percent of the "
    "total, the dairy and the brewery for a quarter, and public buildings for the rest. Losses "
    "from leaks fell from eighteen to fourteen percent after the repairs described below.",
    "Works. Crews replaced two kilometres of cast-iron mains under the high street and the "
    "school road, fitted acoustic loggers that listen for leaks at night, and installed "
    "pressure-reducing valves in the hillside district, where bursts had been most frequent. "
    "The reservoir roof was resealed and a second pump was added at the north well.",
    "Outlook. Next year the council plans to replace a further kilometre of old mains, to offer "
    "free water meters to every household that asks for one, and to study a fourth well. "
    "Prices will rise by two percent, below inflation, to pay for the new pump and the meters. "
    "Questions about this report can be sent to the water office at the town hall.",
};

constexpr std::array<std::string_view, 8> kDocumentQuestions = {
    "Where does most of the town's water come from?",
    "How is the water disinfected before it reaches the taps?",
    "By how much did leak losses fall, and why?",
    "Who uses the largest share of the water?",
    "What works are planned for next year?",
    "How often is the water tested, and where?",
    "What happens to the river intake in a dry summer?",
    "Why will prices rise, and by how much?",
};

constexpr std::array<std::string_view, 8> kChatMessages = {
    "Hi! I want to plan a three-day cycling trip along the coast next month. I am reasonably "
    "fit but I have never ridden more than sixty kilometres in a day. Where should I start?",
    "That helps. What should I pack if I want to carry everything myself and stay in small "
    "guest houses rather than camping?",
    "How should I split the distance over the three days if the whole route is about one "
    "hundred and seventy kilometres with a big hill on the second day?",
    "What should I eat and drink during the long day so that I do not run out of energy?",
    "If it rains heavily on the first morning, is it better to wait or to ride anyway?",
    "Can you turn all of this into a short checklist I can print?",
    "One more thing: how do I fix a puncture quickly at the roadside?",
    "Thanks, that is everything. Any last advice for the final day?",
};

}  // namespace

std::span<const std::string_view> SystemPromptParagraphs() { return kSystemPrompt; }
std::span<const std::string_view> UserQuestions() { return kUserQuestions; }
std::span<const std::string_view> DocumentParagraphs() { return kDocument; }
std::span<const std::string_view> DocumentQuestions() { return kDocumentQuestions; }
std::span<const std::string_view> ChatMessages() { return kChatMessages; }

}  // namespace kvengine::demo
