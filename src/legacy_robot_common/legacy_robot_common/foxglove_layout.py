"""A Foxglove layout per robot, from its plugin's FoxgloveView (Foxglove SDK's layout model):
3D with the robot model and TF, the camera, plots, a Teleop panel for mobile bases, service
buttons and the diagnostics, for the robot in its own namespace (/<robot>/..., frames
<robot>/..., as the demo, all_robots.launch.py and a bringup of several robots run them)."""

import foxglove.layouts as fl


def _topic(namespace, relative):
    return f'{namespace}/{relative}'


def _panels(plugin):
    view, ns = plugin.foxglove, f'/{plugin.name}'
    shown = {_topic(ns, 'robot_description'): fl.BaseRendererUrdfTopicSettings(visible=True)}
    if view.teleop:  # a mobile base: where odometry says it is
        shown[_topic(ns, 'odom')] = fl.BaseRendererPoseTopicSettings(visible=True, type='arrow')
    for topic in view.scans:
        shown[_topic(ns, topic)] = fl.BaseRendererLaserScanTopicSettings(visible=True)
    for topic in view.grids:
        shown[_topic(ns, topic)] = fl.BaseRendererRosOccupancyGridTopicSettings(visible=True)
    three_d = fl.ThreeDeePanel(
        title=f'{plugin.label or plugin.name} model and TF',
        config=fl.ThreeDeeConfig(follow_tf=f'{plugin.name}/{view.follow_frame}', topics=shown),
    )
    left = [fl.SplitItem(proportion=2, content=three_d)]
    if view.image:
        left.append(
            fl.SplitItem(
                proportion=1,
                content=fl.ImagePanel(
                    title='camera',
                    config=fl.ImageConfig(
                        image_mode=fl.ImageModeConfig(image_topic=_topic(ns, view.image))
                    ),
                ),
            )
        )
    right = []
    if view.plots:
        right.append(
            fl.SplitItem(
                proportion=1,
                content=fl.PlotPanel(
                    title='plots',
                    config=fl.PlotConfig(
                        paths=[
                            fl.PlotSeries(value=_topic(ns, path), enabled=True)
                            for path in view.plots
                        ]
                    ),
                ),
            )
        )
    if view.teleop:
        right.append(
            fl.SplitItem(
                proportion=1,
                content=fl.TeleopPanel(
                    title='drive (cmd_vel)',
                    config=fl.TeleopConfig(
                        topic=_topic(ns, 'cmd_vel'),
                        publish_rate=10.0,
                        up_button=fl.TeleopButton(field='linear-x', value=0.2),
                        down_button=fl.TeleopButton(field='linear-x', value=-0.2),
                        left_button=fl.TeleopButton(field='angular-z', value=0.5),
                        right_button=fl.TeleopButton(field='angular-z', value=-0.5),
                    ),
                ),
            )
        )
    for service, text in view.services:
        right.append(
            fl.SplitItem(
                proportion=0.5,
                content=fl.ServiceCallPanel(
                    title=text,
                    config=fl.ServiceCallConfig(
                        service_name=_topic(ns, service), request_payload='{}', button_text=text
                    ),
                ),
            )
        )
    right.append(
        fl.SplitItem(proportion=1, content=fl.DiagnosticsSummaryPanel(title='diagnostics'))
    )
    return left, right


def robot_layout(plugin):
    """The robot's foxglove.layouts.Layout."""
    left, right = _panels(plugin)
    return fl.Layout(
        content=fl.SplitContainer(
            direction='row',
            items=[
                fl.SplitItem(
                    proportion=3, content=fl.SplitContainer(direction='column', items=left)
                ),
                fl.SplitItem(
                    proportion=2, content=fl.SplitContainer(direction='column', items=right)
                ),
            ],
        )
    )


def layout_json(plugin):
    """The layout file's text (what Foxglove's Import layout reads)."""
    return robot_layout(plugin).to_json() + '\n'
