"""Topics, per-topic English and Chinese vocabularies, and the demo web's sentence generator."""

from __future__ import annotations

import random
import string
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeVar

__all__ = [
    "LOCAL_NEWS",
    "TOPICS",
    "ZH_PLACES",
    "TextGenerator",
    "Topic",
    "Vocabulary",
    "topic_by_id",
]

_T = TypeVar("_T")


@dataclass(frozen=True, slots=True)
class Vocabulary:
    """The words one topic is written with in one language.

    English verbs are past tense ("observed"); Chinese verbs are bare ("观测").
    """

    nouns: tuple[str, ...]
    verbs: tuple[str, ...]
    adjectives: tuple[str, ...]
    entities: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Topic:
    """A topic of the demo web: a stable id (used as ``true_topic``), a URL slug, two names."""

    id: str
    slug: str
    name_en: str
    name_zh: str
    en: Vocabulary
    zh: Vocabulary

    def name(self, lang: str) -> str:
        return self.name_zh if lang == "zh" else self.name_en

    def vocabulary(self, lang: str) -> Vocabulary:
        return self.zh if lang == "zh" else self.en

    def keywords(self, count: int = 6) -> str:
        """A crawl topic string: both names and the first ``count`` nouns of each language."""
        words = [self.name_en.lower(), *self.en.nouns[:count], self.name_zh, *self.zh.nouns[:count]]
        return " ".join(words)


def _w(text: str) -> tuple[str, ...]:
    return tuple(word.strip() for word in text.split("|") if word.strip())


# Some words sit in more than one topic on purpose (model, growth, star, season, field,
# network, seed ...), so a page's topic cannot be read off a single keyword.
TOPICS: tuple[Topic, ...] = (
    Topic(
        "astronomy",
        "astronomy",
        "Astronomy",
        "天文",
        Vocabulary(
            _w(
                "telescope|galaxy|planet|star|black hole|comet|nebula|orbit|moon|supernova|"
                "solar system|observatory|light year|gravitational wave|exoplanet|asteroid|"
                "eclipse|meteor shower|space probe|dark matter|constellation|field of view|"
                "spectrum|cosmic dust|launch window"
            ),
            _w("observed|photographed|measured|tracked|detected|mapped|studied|catalogued"),
            _w("distant|bright|faint|ancient|massive|rare|icy|rocky"),
            _w(
                "NASA|the Hubble Space Telescope|the James Webb Space Telescope|Jupiter|Mars|"
                "the European Southern Observatory|Saturn"
            ),
        ),
        Vocabulary(
            _w(
                "望远镜|星系|行星|恒星|黑洞|彗星|星云|轨道|月球|超新星|太阳系|天文台|光年|引力波|"
                "系外行星|小行星|日食|流星雨|探测器|暗物质|星座|宇宙|陨石|空间站|明星"
            ),
            _w("观测|拍摄|测量|追踪|探测|记录|研究|发现"),
            _w("遥远|明亮|暗淡|古老|巨大|罕见|神秘"),
            _w("中国科学院|嫦娥五号|哈勃望远镜|天宫空间站|紫金山天文台|木星|火星"),
        ),
    ),
    Topic(
        "cooking",
        "cooking",
        "Cooking",
        "烹饪",
        Vocabulary(
            _w(
                "recipe|sauce|noodle soup|dumpling|frying pan|oven|spice|garlic|olive oil|"
                "roast chicken|tofu|dessert|kitchen|chef|broth|marinade|pastry|stir fry|"
                "rice|seasonal vegetable|menu|bread dough|soy sauce|tasting menu|season"
            ),
            _w("cooked|seasoned|tasted|roasted|simmered|baked|marinated|prepared"),
            _w("delicious|spicy|tender|crispy|traditional|fragrant|homemade|savory"),
            _w("Michelin Guide|Chef Ana Ruiz|the Night Market|Sichuan cuisine|Julia Child"),
        ),
        Vocabulary(
            _w(
                "菜谱|食材|厨师|火锅|饺子|面条|酱油|调料|炒锅|米饭|蔬菜|牛肉|豆腐|汤|烤箱|味道|"
                "甜点|餐厅|家常菜|红烧肉|小笼包|蒸鱼|厨房|口感|季节"
            ),
            _w("烹制|品尝|准备|腌制|炖煮|调味|烘焙|翻炒"),
            _w("美味|香辣|清淡|鲜嫩|传统|正宗|香浓"),
            _w("川菜|粤菜|米其林指南|老字号|淮扬菜"),
        ),
    ),
    Topic(
        "football",
        "football",
        "Football",
        "足球",
        Vocabulary(
            _w(
                "match|goal|striker|goalkeeper|league|penalty|coach|midfield|defender|stadium|"
                "transfer|season|championship|referee|red card|tactic|fan|derby|header|"
                "free kick|squad|star|field|cup final|home game"
            ),
            _w("scored|defended|signed|trained|defeated|coached|won|saved"),
            _w("dramatic|decisive|young|tactical|fierce|talented|unbeaten|late"),
            _w(
                "the Premier League|Real Madrid|Lionel Messi|the World Cup|FC Barcelona|"
                "the Champions League"
            ),
        ),
        Vocabulary(
            _w(
                "球队|球员|教练|比赛|进球|联赛|射门|点球|球迷|赛季|冠军|守门员|后卫|前锋|中场|"
                "转会|体育场|裁判|红牌|战术|主场|积分榜|明星|场地|决赛"
            ),
            _w("赢得|打进|击败|签下|训练|防守|攻入|扑救"),
            _w("精彩|激烈|关键|年轻|出色|顽强|惊险"),
            _w("中超联赛|国家队|梅西|皇家马德里|英超|世界杯|欧冠"),
        ),
    ),
    Topic(
        "machine_learning",
        "machine-learning",
        "Machine learning",
        "人工智能",
        Vocabulary(
            _w(
                "neural network|model|dataset|algorithm|training data|classifier|gradient|"
                "language model|feature|benchmark|GPU|inference|embedding|transformer|"
                "loss function|random seed|reinforcement learning|computer vision|"
                "network|parameter|accuracy|label|prediction|field|chatbot"
            ),
            _w("trained|optimised|deployed|evaluated|fine-tuned|predicted|released|labelled"),
            _w("large|efficient|open-source|accurate|robust|deep|novel|multilingual"),
            _w("OpenAI|DeepMind|the Turing Award|PyTorch|Stanford University|Hugging Face"),
        ),
        Vocabulary(
            _w(
                "神经网络|深度学习|模型|数据集|算法|训练数据|机器学习|参数|语言模型|梯度|特征|"
                "分类器|推理|芯片|聊天机器人|自然语言处理|计算机视觉|强化学习|准确率|向量|"
                "标注|服务器|网络|预测|领域"
            ),
            _w("训练|优化|部署|识别|预测|生成|评估|开源"),
            _w("智能|高效|复杂|大规模|先进|开放|精准"),
            _w("百度|清华大学|深度求索|图灵奖|阿里云|商汤科技"),
        ),
    ),
    Topic(
        "gardening",
        "gardening",
        "Gardening",
        "园艺",
        Vocabulary(
            _w(
                "rose|soil|seed|compost|fertiliser|greenhouse|tomato plant|herb garden|"
                "pruning shears|flower bed|lawn|root system|seedling|orchid|vegetable patch|"
                "watering can|mulch|pest|perennial|balcony garden|hedge|growth|season|field|bulb"
            ),
            _w("planted|pruned|watered|harvested|sowed|repotted|fertilised|grew"),
            _w("fragrant|hardy|lush|colourful|shady|fertile|drought-tolerant|organic"),
            _w("the Royal Horticultural Society|Kew Gardens|Chelsea Flower Show|Monty Don"),
        ),
        Vocabulary(
            _w(
                "花园|玫瑰|土壤|种子|肥料|盆栽|月季|多肉植物|温室|花盆|阳台|菜园|害虫|根系|叶子|"
                "堆肥|番茄|兰花|草坪|园丁|树苗|花坛|增长|季节|场地"
            ),
            _w("种植|修剪|浇灌|移栽|施肥|培育|播种|采摘"),
            _w("茂盛|鲜艳|耐寒|肥沃|芬芳|翠绿|健壮"),
            _w("北京植物园|牡丹|杭州西湖|中国花卉协会|拙政园"),
        ),
    ),
    Topic(
        "finance",
        "finance",
        "Finance",
        "金融",
        Vocabulary(
            _w(
                "stock|market|investor|interest rate|bond|inflation|exchange rate|fund|bank|"
                "portfolio|dividend|loan|central bank|index|asset|earnings report|currency|"
                "growth|risk|model|network|valuation|share price|budget|star"
            ),
            _w("invested|raised|cut|bought|sold|reported|forecast|priced"),
            _w("volatile|steady|strong|cautious|bullish|bearish|quarterly|global"),
            _w(
                "the Federal Reserve|Wall Street|the European Central Bank|the Nasdaq|the Dow Jones"
            ),
        ),
        Vocabulary(
            _w(
                "股票|市场|投资者|利率|基金|银行|债券|通货膨胀|汇率|股市|收益|风险|贷款|央行|指数|"
                "资产|经济|货币政策|上市公司|财报|增长|证券|外汇|模型|网络"
            ),
            _w("上涨|下跌|发布|调整|购买|抛售|预测|融资"),
            _w("稳健|波动|强劲|谨慎|宽松|全球|长期"),
            _w("中国人民银行|上证指数|深交所|美联储|港交所"),
        ),
    ),
)

# Off-topic pages (true_topic None) are local news written with this vocabulary.
LOCAL_NEWS = Topic(
    "local_news",
    "news",
    "Local news",
    "本地新闻",
    Vocabulary(
        _w(
            "city council|bus route|library|parking rule|school|bridge|weather forecast|"
            "street festival|recycling scheme|train timetable|community centre|road works|"
            "museum|swimming pool|market square"
        ),
        _w("discussed|announced|opened|reviewed|closed|renovated|approved|delayed"),
        _w("new|busy|local|temporary|quiet|popular|historic"),
        _w("the city council|Riverside Library|the transport office|the mayor"),
    ),
    Vocabulary(
        _w(
            "交通|市议会|图书馆|公交线路|天气|学校|停车场|社区|节日|地铁|桥梁|博物馆|菜市场|"
            "游泳馆|道路施工"
        ),
        _w("讨论|宣布|开放|审议|关闭|翻新|批准|推迟"),
        _w("新|繁忙|本地|临时|安静|热门|历史悠久"),
        _w("市政府|区图书馆|交通局|市长"),
    ),
)

_EN_PEOPLE = _w(
    "researchers|local residents|experts|our reporters|visitors|students|families|"
    "a small team|volunteers|critics|beginners|enthusiasts"
)
_EN_TIME = _w(
    "this week|last year|on Monday|in recent months|over the weekend|since the spring|"
    "earlier this month|last season|yesterday"
)
_EN_LATER = _w("next month|later this year|in the autumn|next week|after the summer")
_EN_CONNECT = _w("However,|Meanwhile,|In addition,|Still,|At the same time,|For now,")
_EN_GENERAL = _w(
    "the community|daily life|the local economy|the weekend|the project|"
    "the neighbourhood|the coming year|public debate|the budget"
)
_ZH_PEOPLE = _w("研究人员|当地居民|专家|记者|游客|学生|家长|志愿者|评论人士|初学者|爱好者")
_ZH_TIME = _w("本周|去年|周一|近几个月|上周末|今年春天|本月初|上个赛季|昨天")
_ZH_LATER = _w("下个月|今年晚些时候|秋天|下周|夏天过后")
_ZH_CONNECT = _w("此外，|与此同时，|不过，|据报道，|总的来说，|值得注意的是，")
_ZH_GENERAL = _w("社区|日常生活|本地经济|周末|这个项目|城市|未来一年|公众讨论|预算")
_ZH_PLACES = _w("北京|上海|广州|成都|杭州|深圳|武汉|南京")
ZH_PLACES = _ZH_PLACES
"""The cities the Chinese sentences name ("在{place}，……"): proper names no vocabulary (and so
no demo KB) lists, the ground truth for names the recogniser finds that the KB lacks."""

_EN_SENTENCES = (
    "{Time}, {people} {verb} a {adj} {noun} that surprised {people2}.",
    "{Entity} {verb} the {noun} {time}, according to {people}.",
    "{People} say the {noun} matters more than the {noun2} they studied before.",
    "The {adj} {noun} was {verb} while the {noun2} stayed {adj2}.",
    "{Connect} the {noun} has become a {adj} part of {general}.",
    "Few people expected the {noun} to matter so much for the {noun2}.",
    "{People} {verb} the {noun} and then compared it with the {noun2}.",
    "A {adj} {noun} is often the first thing {people} notice about {general}.",
    "{Entity} plans to share more about the {noun} and the {noun2} {later}.",
    "Questions about the {noun} remain, but the {adj} {noun2} is here to stay.",
    "{People} who follow {topic} closely keep talking about the {noun}.",
)
_ZH_SENTENCES = (
    "{time}，{people}{verb}了{adj}的{noun}。",
    "{entity}表示，{noun}对{noun2}的影响越来越明显。",
    "{people}认为，{adj}的{noun}将改变{general}。",
    "在{place}，越来越多的人开始关注{noun}和{noun2}。",
    "{connect}{noun}已经成为{general}中{adj}的一部分。",
    "很多人没有想到，{noun}会对{noun2}如此重要。",
    "{people}先{verb}了{noun}，然后把它和{noun2}进行了比较。",
    "{entity}计划在{later}公布更多关于{noun}的细节。",
    "关于{noun}的讨论仍在继续，但{adj}的{noun2}已经深入人心。",
    "关注{topic}的{people}经常谈论{noun}。",
)
_EN_TITLES = (
    "How {entity} {verb} the {adj} {noun}",
    "The {adj} {noun}: what {people} should know",
    "Why the {noun} matters for the {noun2}",
    "{Adj} {noun} and the future of the {noun2}",
    "A closer look at the {adj} {noun}",
    "{Entity} and the {noun}: {people} react",
)
_ZH_TITLES = (
    "{entity}{verb}{adj}的{noun}",
    "{noun}：{people}需要知道的{count}件事",
    "为什么{noun}对{noun2}很重要",
    "{adj}的{noun}与{noun2}的未来",
    "深度解读：{adj}的{noun}",
    "{entity}谈{noun}与{noun2}",
)
_ZH_COUNTS = _w("三|五|七|十")


def topic_by_id(topic_id: str) -> Topic:
    """The topic with this id.

    Raises:
        KeyError: no topic has that id.
    """
    for topic in TOPICS:
        if topic.id == topic_id:
            return topic
    raise KeyError(topic_id)


def _cap(text: str) -> str:
    return text[:1].upper() + text[1:]


def _fields(template: str) -> tuple[str, ...]:
    return tuple(name for _, name, _, _ in string.Formatter().parse(template) if name)


_FIELDS = {t: _fields(t) for t in (*_EN_SENTENCES, *_ZH_SENTENCES, *_EN_TITLES, *_ZH_TITLES)}
_SHARED = {
    "en": {
        "people": _EN_PEOPLE,
        "people2": _EN_PEOPLE,
        "time": _EN_TIME,
        "later": _EN_LATER,
        "connect": _EN_CONNECT,
        "general": _EN_GENERAL,
    },
    "zh": {
        "people": _ZH_PEOPLE,
        "people2": _ZH_PEOPLE,
        "time": _ZH_TIME,
        "later": _ZH_LATER,
        "connect": _ZH_CONNECT,
        "general": _ZH_GENERAL,
        "place": _ZH_PLACES,
        "count": _ZH_COUNTS,
    },
}


class TextGenerator:
    """Writes titles and paragraphs for a topic from a seeded random source.

    ``topic=None`` writes off-topic local news. About one sentence in eight borrows its nouns
    from another topic, and about one in six is general chatter, so topics overlap a little.
    """

    def __init__(self, rng: random.Random) -> None:
        self._rng = rng

    def title(self, topic: Topic | None, lang: str) -> str:
        own = topic or LOCAL_NEWS
        return self._fill(self._pick(_ZH_TITLES if lang == "zh" else _EN_TITLES), own, lang, own)

    def paragraphs(self, topic: Topic | None, lang: str, count: int) -> tuple[tuple[str, ...], ...]:
        """``count`` paragraphs of three to five sentences each."""
        return tuple(
            tuple(self.sentence(topic, lang) for _ in range(3 + int(self._rng.random() * 3)))
            for _ in range(count)
        )

    def sentence(self, topic: Topic | None, lang: str) -> str:
        own = topic or LOCAL_NEWS
        roll = self._rng.random()
        if roll < 0.12:
            own = self._pick([t for t in TOPICS if t is not topic])
        elif roll < 0.28:
            own = LOCAL_NEWS
        template = self._pick(_ZH_SENTENCES if lang == "zh" else _EN_SENTENCES)
        return self._fill(template, own, lang, topic or own)

    def _pick(self, items: Sequence[_T]) -> _T:
        return items[int(self._rng.random() * len(items))]

    def _pair(self, items: Sequence[str]) -> tuple[str, str]:
        first = int(self._rng.random() * len(items))
        second = (first + 1 + int(self._rng.random() * (len(items) - 1))) % len(items)
        return items[first], items[second]

    def _fill(self, template: str, topic: Topic, lang: str, named: Topic) -> str:
        """The template with only the slots it uses drawn, in the order they appear."""
        vocab = topic.vocabulary(lang)
        shared = _SHARED[lang]
        slots: dict[str, str] = {}
        for field in _FIELDS[template]:
            key = field.lower()
            if key in slots:
                value = slots[key]
            elif key in {"noun", "noun2"}:
                slots["noun"], slots["noun2"] = self._pair(vocab.nouns)
                value = slots[key]
            elif key in {"adj", "adj2"}:
                slots["adj"], slots["adj2"] = self._pair(vocab.adjectives)
                value = slots[key]
            elif key == "verb":
                value = self._pick(vocab.verbs)
            elif key == "entity":
                value = self._pick(vocab.entities)
            elif key == "topic":
                value = named.name(lang) if lang == "zh" else named.name_en.lower()
            else:
                value = self._pick(shared[key])
            slots[key] = value
            slots[field] = _cap(value) if field[0].isupper() else value
        return template.format_map(slots)
